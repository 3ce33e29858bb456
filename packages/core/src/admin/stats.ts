import type { Outbox } from '../outbox/define-outbox.js'
import type { OutboxBackend, OutboxState, StatsRow } from '../protocol/backend.js'
import type { SlotStats } from '../protocol/wal.js'
import { adminBackend } from './checks.js'

/** Counts of one topic, by state, in {@link OutboxStats}. */
export interface TopicStats {
  readonly topic: string
  readonly pending: number
  readonly processing: number
  readonly dead: number
  /** `null` unless counted with `includeDelivered`. */
  readonly delivered: number | null
  /** Age (`now() - created_at`) of the topic's oldest pending or processing message, in ms; `null` when none. */
  readonly oldestPendingAgeMs: number | null
  /** How late the topic's oldest due message is (`now() - available_at`), in ms; `null` when none is due. */
  readonly oldestDueLagMs: number | null
}

/** What {@link outboxStats} returns: the state of the queue, read in one statement. */
export interface OutboxStats {
  /** Totals by state. `delivered` is `null` unless counted with `includeDelivered`. */
  readonly states: Readonly<Record<Exclude<OutboxState, 'delivered'>, number>> & {
    readonly delivered: number | null
  }
  /** The same counts per topic, sorted by topic. */
  readonly topics: readonly TopicStats[]
  /**
   * Age of the oldest message not yet delivered (`pending` or `processing`), in ms, or `null` when
   * the queue is empty. Includes messages waiting for their `delayMs` or their retry backoff.
   */
  readonly oldestPendingAgeMs: number | null
  /**
   * How late the relay is: `now() - available_at` of the oldest due message (pending and due, or
   * processing with a lapsed lease), in ms, or `null` when nothing is due. The number to alert on.
   */
  readonly oldestDueLagMs: number | null
  /** Dead-lettered messages (same as `states.dead`). */
  readonly dead: number
  /**
   * `transport: 'wal'` only: the replication slot's retained WAL and lag in bytes, whether a relay
   * reads it (`null` when the slot does not exist). Absent for `'table'` outboxes. See docs/wal.md.
   */
  readonly slot?: SlotStats | null
}

/** Options of {@link outboxStats}. */
export interface OutboxStatsOptions {
  /**
   * Also count delivered rows (kept with `keepDelivered: true`).
   *
   * @defaultValue `false`
   */
  includeDelivered?: boolean
}

const maxOf = (a: number | null, b: number | null): number | null =>
  a === null ? b : b === null ? a : Math.max(a, b)

/** Folds the rows of {@link OutboxBackend.stats} into {@link OutboxStats}. */
export function summarizeStats(rows: readonly StatsRow[], includeDelivered = false): OutboxStats {
  const byTopic = new Map<
    string,
    {
      pending: number
      processing: number
      dead: number
      delivered: number | null
      age: number | null
      lag: number | null
    }
  >()
  const states = { pending: 0, processing: 0, dead: 0, delivered: includeDelivered ? 0 : null }
  let age: number | null = null
  let lag: number | null = null
  for (const r of rows) {
    let t = byTopic.get(r.topic)
    if (!t) {
      t = { pending: 0, processing: 0, dead: 0, delivered: includeDelivered ? 0 : null, age: null, lag: null }
      byTopic.set(r.topic, t)
    }
    if (r.state === 'delivered') {
      t.delivered = (t.delivered ?? 0) + r.count
      states.delivered = (states.delivered ?? 0) + r.count
      continue
    }
    t[r.state] += r.count
    states[r.state] += r.count
    if (r.state === 'pending' || r.state === 'processing') {
      t.age = maxOf(t.age, r.oldestAgeMs)
      t.lag = maxOf(t.lag, r.oldestDueLagMs)
      age = maxOf(age, r.oldestAgeMs)
      lag = maxOf(lag, r.oldestDueLagMs)
    }
  }
  const topics = [...byTopic.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([topic, t]) => ({
      topic,
      pending: t.pending,
      processing: t.processing,
      dead: t.dead,
      delivered: t.delivered,
      oldestPendingAgeMs: t.age,
      oldestDueLagMs: t.lag,
    }))
  return { states, topics, oldestPendingAgeMs: age, oldestDueLagMs: lag, dead: states.dead }
}

/**
 * Reads the state of the queue in one read-only statement: counts by state and topic, the age of
 * the oldest pending message, how late the oldest due message is, and the dead count. It scans the
 * table's non-delivered rows (the backlog and the dead letters), so poll it every few seconds at
 * most, not in a loop.
 *
 * @example
 * ```ts
 * const { oldestDueLagMs, dead } = await outboxStats(outbox, backend)
 * ```
 */
export async function outboxStats(
  outbox: Outbox<any>,
  backend: OutboxBackend,
  options: OutboxStatsOptions = {},
): Promise<OutboxStats> {
  const can = adminBackend('outboxStats', {
    outbox,
    backend,
    member: 'stats',
    options,
    known: ['includeDelivered'],
  })
  const includeDelivered = options.includeDelivered === true
  const rows = await can.stats({ table: outbox.table, includeDelivered })
  const stats = summarizeStats(rows, includeDelivered)
  if (outbox.transport !== 'wal' || !backend.wal) return stats
  return { ...stats, slot: await backend.wal.slotStats(outbox) }
}
