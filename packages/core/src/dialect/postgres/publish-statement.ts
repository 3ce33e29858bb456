import type { Outbox } from '../../outbox/define-outbox.js'
import type { PreparedMessage, PublishResult } from '../../outbox/message.js'
import {
  POSTGRES_NOT_IN_TRANSACTION,
  type POSTGRES_TRANSACTION_MARKER,
  type PostgresStatements,
  postgresStatements,
} from './statements.js'

/** A ready-to-run publish statement for PostgreSQL adapters. */
export interface PostgresPublishStatement {
  /** SQL text with `$n` placeholders. */
  readonly text: string
  /** Positional parameters: strings, numbers, null, and arrays of those. */
  readonly values: unknown[]
  /** A stable name for drivers that cache prepared statements. */
  readonly name: string
  /**
   * The same statement with its values written inline as literals, when it has one: a driver that
   * does not name its statements may send it with the simple query protocol (one message instead
   * of Parse, Bind, Describe, Execute and Sync; node-postgres does so for a query without values).
   */
  readonly simple?: string
}

/** Options of {@link postgresPublishStatement}. */
export interface PostgresPublishOptions {
  /**
   * Use the guarded form: it writes only while {@link POSTGRES_TRANSACTION_MARKER}, sent on the
   * same connection right before, is still in force (see {@link PostgresStatements.publishOneGuarded}).
   */
  guarded?: boolean
}

/**
 * The one statement that writes `messages` and (when `outbox.notify`) queues the relay's wake-up
 * inside the caller's transaction: one round trip for any number of messages.
 */
export function postgresPublishStatement(
  outbox: Outbox,
  messages: readonly PreparedMessage[],
  options: PostgresPublishOptions = {},
): PostgresPublishStatement {
  const sql = postgresStatements(outbox.table)
  const guarded = options.guarded === true
  const channel = outbox.notify ? outbox.channel : ''
  // Messages of ordered topics take their key's advisory lock and a `seq` (docs/ordering.md);
  // a statement without any keeps the plain form, which costs nothing extra.
  const orderedTopics = new Set<string>()
  if (outbox.orderedTopics.size > 0) {
    for (const m of messages) if (outbox.orderedTopics.has(m.topic)) orderedTopics.add(m.topic)
  }
  const ordered = orderedTopics.size > 0
  // Without a dedupKey (the common publish) and not ordered: no ON CONFLICT to pay for, and no
  // lookup of an existing dedupKey; the same parameters and rows.
  const plain = !ordered && messages.every((m) => m.dedupKey === null)
  const suffix = `${ordered ? '_ordered' : ''}${guarded ? '_guarded' : ''}${plain ? '_plain' : ''}`
  if (messages.length === 1) {
    const m = messages[0]!
    return {
      text: plain
        ? guarded
          ? sql.publishOneGuardedPlain
          : sql.publishOnePlain
        : ordered
          ? guarded
            ? sql.publishOneOrderedGuarded
            : sql.publishOneOrdered
          : guarded
            ? sql.publishOneGuarded
            : sql.publishOne,
      values: [m.id, m.topic, m.key, m.payload, m.headers, m.delayMs, m.dedupKey, channel],
      name: `outboxkit_publish_one${suffix}`,
    }
  }
  const n = messages.length
  const cols: unknown[][] = [[], [], [], [], [], [], []]
  for (let i = 0; i < n; i++) {
    const m = messages[i]!
    cols[0]!.push(m.id)
    cols[1]!.push(m.topic)
    cols[2]!.push(m.key)
    cols[3]!.push(m.payload)
    cols[4]!.push(m.headers)
    cols[5]!.push(m.delayMs)
    cols[6]!.push(m.dedupKey)
  }
  if (ordered) {
    return {
      text: guarded ? sql.publishManyOrderedGuarded : sql.publishManyOrdered,
      values: [...cols, channel, [...orderedTopics]],
      name: `outboxkit_publish_many${suffix}`,
    }
  }
  return {
    text: plain
      ? guarded
        ? sql.publishManyGuardedPlain
        : sql.publishManyPlain
      : guarded
        ? sql.publishManyGuarded
        : sql.publishMany,
    values: [...cols, channel],
    name: `outboxkit_publish_many${suffix}`,
  }
}

/**
 * Turns the rows of a publish statement into results in message order. A message whose
 * `dedupKey` already existed gets `published: false` and the existing id when visible; a repeated
 * `dedupKey` inside one batch resolves to the first message that carries it.
 */
export function readPostgresPublishResult(
  messages: readonly PreparedMessage[],
  rows: readonly Record<string, unknown>[],
): PublishResult[] {
  const inserted = new Set<string>()
  const existing = new Map<string, string>()
  for (const r of rows) {
    if (r.id === null || r.id === undefined) continue
    if (r.inserted === true || r.inserted === 't') inserted.add(r.id as string)
    else if (typeof r.dedup_key === 'string') existing.set(r.dedup_key, r.id as string)
  }
  const firstByDedup = new Map<string, string>()
  return messages.map((m) => {
    if (inserted.has(m.id)) {
      if (m.dedupKey !== null && !firstByDedup.has(m.dedupKey)) firstByDedup.set(m.dedupKey, m.id)
      return { id: m.id, published: true }
    }
    const other = m.dedupKey === null ? undefined : (existing.get(m.dedupKey) ?? firstByDedup.get(m.dedupKey))
    return { id: other ?? m.id, published: false }
  })
}

/** True when the rows of a guarded publish statement say it ran outside the marked transaction (nothing was written). */
export function isPostgresPublishRefused(rows: readonly Record<string, unknown>[]): boolean {
  return rows.some(
    (r) => r.dedup_key === POSTGRES_NOT_IN_TRANSACTION && (r.id === null || r.id === undefined),
  )
}
