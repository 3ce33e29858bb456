import { assertOutbox, type Outbox } from '../outbox/define-outbox.js'
import { OutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'
import type { BlockedKeyRow, DeadRow, OutboxBackend, OutboxState, StatsRow } from '../protocol/backend.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function need<K extends 'stats' | 'listDead' | 'discard' | 'blockedKeys'>(
  backend: unknown,
  member: K,
  what: string,
): asserts backend is OutboxBackend & Required<Pick<OutboxBackend, K>> {
  if (!backend || typeof (backend as OutboxBackend).claim !== 'function') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${what} needs an OutboxBackend (e.g. pgBackend(...)) as second argument, got ${formatValue(backend)}.`,
    )
  }
  if (typeof (backend as OutboxBackend)[member] !== 'function') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${what} is not supported by the ${(backend as OutboxBackend).name} backend (it has no ${member}()). Use a PostgreSQL backend (pg, postgres.js, PGlite).`,
    )
  }
}

function stringList(what: string, name: string, list: unknown): readonly string[] | undefined {
  if (list === undefined) return undefined
  if (!Array.isArray(list) || list.some((v) => typeof v !== 'string')) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${what} ${name} must be an array of strings, got ${formatValue(list)}.`,
    )
  }
  return list
}

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
}

/** Options of {@link outboxStats}. */
export interface OutboxStatsOptions {
  /** Also count delivered rows (kept with `keepDelivered: true`). Default `false`. */
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
  assertOutbox(outbox, 'outboxStats')
  need(backend, 'stats', 'outboxStats')
  const includeDelivered = options.includeDelivered === true
  const rows = await backend.stats({ table: outbox.table, includeDelivered })
  return summarizeStats(rows, includeDelivered)
}

/** A dead-lettered message as {@link listDead} returns it. */
export interface DeadMessage {
  readonly id: string
  readonly topic: string
  readonly key: string | null
  readonly payload: unknown
  readonly headers: Readonly<Record<string, string>>
  /** Deliveries used (the last one failed or never settled). */
  readonly attempts: number
  /** The handler's error message, the `Cancel` reason, or why the claim gave up. */
  readonly lastError: string | null
  readonly createdAt: Date
  /** When the message was dead-lettered. */
  readonly deadAt: Date
}

/** Options of {@link listDead}. */
export interface ListDeadOptions {
  /** Only these topics. */
  topics?: readonly string[]
  /** At most this many messages (1 to 10 000). Default 100. */
  limit?: number
  /**
   * The next page: pass the last message of the previous page. Pages are sorted newest death
   * first, by the death time (to the millisecond) then id, so no message is skipped or repeated
   * between pages, even while relays run or messages are redriven or discarded meanwhile.
   *
   * @example
   * ```ts
   * for (let page = await listDead(outbox, backend); page.length > 0; ) {
   *   for (const m of page) console.log(m.id, m.lastError)
   *   page = await listDead(outbox, backend, { after: page.at(-1) })
   * }
   * ```
   */
  after?: Pick<DeadMessage, 'id' | 'deadAt'>
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

function toDeadMessage(r: DeadRow): DeadMessage {
  return {
    id: r.id,
    topic: r.topic,
    key: r.key,
    payload: parseJson(r.payload),
    headers: parseJson(r.headers) as Record<string, string>,
    attempts: r.attempts,
    lastError: r.lastError,
    createdAt: new Date(r.createdAtMs),
    deadAt: new Date(r.deadAtMs),
  }
}

/** Lists dead-lettered messages with their `last_error`, newest death first, in one statement. */
export async function listDead(
  outbox: Outbox<any>,
  backend: OutboxBackend,
  options: ListDeadOptions = {},
): Promise<DeadMessage[]> {
  assertOutbox(outbox, 'listDead')
  need(backend, 'listDead', 'listDead')
  const topics = stringList('listDead', 'topics', options.topics)
  const limit = options.limit ?? 100
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `listDead limit must be an integer from 1 to 10000, got ${formatValue(limit)}.`,
    )
  }
  const after = options.after
  if (
    after !== undefined &&
    (!after ||
      typeof after.id !== 'string' ||
      !UUID.test(after.id) ||
      !(after.deadAt instanceof Date) ||
      Number.isNaN(after.deadAt.getTime()))
  ) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `listDead after must be the last message of the previous page (with its id and deadAt), got ${formatValue(after)}.`,
    )
  }
  const rows = await backend.listDead({
    table: outbox.table,
    topics,
    limit,
    after: after ? { deadAtMs: after.deadAt.getTime(), id: after.id } : undefined,
  })
  return rows.map(toDeadMessage)
}

/** Options of {@link discard}. */
export interface DiscardOptions {
  /** Only these message ids. */
  ids?: readonly string[]
  /** Only these topics. */
  topics?: readonly string[]
}

/**
 * Deletes dead-lettered messages for good (by ids, by topics, or, without options, all of them),
 * in one statement. Never touches pending, processing or delivered rows. Returns how many.
 */
export async function discard(
  outbox: Outbox<any>,
  backend: OutboxBackend,
  options: DiscardOptions = {},
): Promise<number> {
  assertOutbox(outbox, 'discard')
  need(backend, 'discard', 'discard')
  const ids = stringList('discard', 'ids', options.ids)
  const topics = stringList('discard', 'topics', options.topics)
  if (ids?.some((id) => !UUID.test(id))) {
    throw new OutboxError('INVALID_CONFIG', 'discard ids must be UUID strings.')
  }
  return backend.discard({ table: outbox.table, ids, topics })
}

/** A key of an ordered topic held back by its head message, as {@link listBlockedKeys} returns it. */
export interface BlockedKey {
  readonly key: string
  /**
   * `'dead'`: the head was dead-lettered and blocks the key until it is redriven or discarded.
   * `'retrying'`: the head failed and waits for its next attempt (only with `includeRetrying`).
   */
  readonly reason: 'dead' | 'retrying'
  /** The head: the key's oldest message that is not delivered. */
  readonly head: {
    readonly id: string
    readonly topic: string
    readonly attempts: number
    readonly lastError: string | null
    readonly createdAt: Date
    /** When it was dead-lettered, or when its next attempt is due. */
    readonly since: Date
  }
  /** How many messages of the key wait behind the head. */
  readonly waiting: number
}

/** Options of {@link listBlockedKeys}. */
export interface ListBlockedKeysOptions {
  /** Only keys whose head is of these topics. */
  topics?: readonly string[]
  /** Also list keys whose head is retrying (failed, waiting for its backoff). Default `false`. */
  includeRetrying?: boolean
  /** At most this many keys (1 to 10 000). Default 100. */
  limit?: number
  /** The next page: the `key` of the last entry of the previous page (keys are sorted). */
  afterKey?: string
}

/**
 * Lists the keys of ordered topics whose head message holds back the rest: dead-lettered heads
 * (the key is blocked until you {@link redrive} or {@link discard} the head; see
 * docs/ordering.md) and, with `includeRetrying`, heads waiting for a retry. One read-only
 * statement; it reads every not-yet-delivered row of the ordered topics.
 *
 * @example
 * ```ts
 * for (const b of await listBlockedKeys(outbox, backend)) {
 *   console.log(b.key, b.waiting, b.head.lastError)
 *   // fixed the cause? await redrive(outbox, backend, { ids: [b.head.id] })
 * }
 * ```
 */
export async function listBlockedKeys(
  outbox: Outbox<any>,
  backend: OutboxBackend,
  options: ListBlockedKeysOptions = {},
): Promise<BlockedKey[]> {
  assertOutbox(outbox, 'listBlockedKeys')
  need(backend, 'blockedKeys', 'listBlockedKeys')
  const topics = stringList('listBlockedKeys', 'topics', options.topics)
  const limit = options.limit ?? 100
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `listBlockedKeys limit must be an integer from 1 to 10000, got ${formatValue(limit)}.`,
    )
  }
  if (options.afterKey !== undefined && typeof options.afterKey !== 'string') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `listBlockedKeys afterKey must be a key string, got ${formatValue(options.afterKey)}.`,
    )
  }
  const rows = await backend.blockedKeys({
    table: outbox.table,
    continueAfterDead: [...outbox.deadLetterContinues],
    topics,
    includeRetrying: options.includeRetrying === true,
    limit,
    afterKey: options.afterKey,
  })
  return rows.map(toBlockedKey)
}

function toBlockedKey(r: BlockedKeyRow): BlockedKey {
  return {
    key: r.key,
    reason: r.headState === 'dead' ? 'dead' : 'retrying',
    head: {
      id: r.headId,
      topic: r.headTopic,
      attempts: r.headAttempts,
      lastError: r.headLastError,
      createdAt: new Date(r.headCreatedAtMs),
      since: new Date(r.headSinceMs),
    },
    waiting: r.waiting,
  }
}
