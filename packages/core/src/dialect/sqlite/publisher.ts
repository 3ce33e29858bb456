import type { Inbox } from '../../outbox/define-inbox.js'
import type { Outbox } from '../../outbox/define-outbox.js'
import type { PreparedMessage, PublishResult } from '../../outbox/message.js'
import { createPublishPipeline } from '../../protocol/publish-pipeline.js'
import type { Publisher } from '../../protocol/publisher.js'
import { sqliteInboxStatements } from './statements/inbox.js'
import { bindSqlite, sqliteStatements } from './statements.js'
import { wakeSqliteAfterTransaction } from './wake.js'

/** A ready-to-run SQLite statement: `?` placeholders and their values. */
export interface SqliteStatement {
  /** SQL text with positional `?` placeholders. */
  readonly sql: string
  /** The values of the placeholders, in order: strings, numbers and null. */
  readonly params: unknown[]
}

/** Rows a SQLite driver returned, directly (synchronous drivers) or as a Promise. */
export type SqliteRows = readonly Record<string, unknown>[]

/**
 * The INSERT that writes `messages`: one statement for any number of messages (a list is passed
 * as one JSON argument). It returns the id of each row it inserted; a message whose `dedupKey`
 * already exists is skipped (`ON CONFLICT DO NOTHING`). Messages of ordered topics are numbered
 * after the last `seq` of their key (docs/ordering.md).
 */
export function sqlitePublishStatement(
  outbox: Outbox,
  messages: readonly PreparedMessage[],
): SqliteStatement {
  const sql = sqliteStatements(outbox.table)
  // Whole milliseconds, rounded up: never delivered before now + delayMs.
  const delay = (m: PreparedMessage) => Math.ceil(m.delayMs)
  if (messages.length === 1) {
    const m = messages[0]!
    const statement = outbox.orderedTopics.has(m.topic) ? sql.publishOneOrdered : sql.publishOne
    return {
      sql: statement.sql,
      params: bindSqlite(statement, {
        id: m.id,
        topic: m.topic,
        key: m.key,
        payload: m.payload,
        headers: m.headers,
        delay_ms: delay(m),
        dedup_key: m.dedupKey,
      }),
    }
  }
  const rankOfKey = new Map<string, number>()
  const rows = messages.map((m) => {
    let rank: number | null = null
    if (m.key !== null && outbox.orderedTopics.has(m.topic)) {
      rank = (rankOfKey.get(m.key) ?? 0) + 1
      rankOfKey.set(m.key, rank)
    }
    return [m.id, m.topic, m.key, m.payload, m.headers, delay(m), m.dedupKey, rank]
  })
  return {
    sql: sql.publishMany.sql,
    params: bindSqlite(sql.publishMany, { messages: JSON.stringify(rows) }),
  }
}

/**
 * The SELECT that finds the rows holding the `dedupKey`s of messages the INSERT skipped, or
 * `undefined` when every message was inserted (the common case: no second statement).
 */
export function sqliteDedupStatement(
  outbox: Outbox,
  messages: readonly PreparedMessage[],
  inserted: SqliteRows,
): SqliteStatement | undefined {
  if (inserted.length === messages.length) return undefined
  const ids = new Set(inserted.map((r) => r.id))
  const keys = new Set<string>()
  for (const m of messages) if (m.dedupKey !== null && !ids.has(m.id)) keys.add(m.dedupKey)
  if (keys.size === 0) return undefined
  const statement = sqliteStatements(outbox.table).dedupLookup
  return { sql: statement.sql, params: bindSqlite(statement, { dedup_keys: JSON.stringify([...keys]) }) }
}

/**
 * Turns the rows of the INSERT (and of the dedup SELECT) into results in message order. A message
 * whose `dedupKey` already existed gets `published: false` and the id of the row holding it; a
 * repeated `dedupKey` inside one batch resolves to the first message that carries it.
 */
export function readSqlitePublishResult(
  messages: readonly PreparedMessage[],
  inserted: SqliteRows,
  existing: SqliteRows = [],
): PublishResult[] {
  const ids = new Set<unknown>(inserted.map((r) => r.id))
  const holder = new Map<string, string>()
  for (const r of existing) if (typeof r.dedup_key === 'string') holder.set(r.dedup_key, String(r.id))
  const firstByDedup = new Map<string, string>()
  return messages.map((m) => {
    if (ids.has(m.id)) {
      if (m.dedupKey !== null && !firstByDedup.has(m.dedupKey)) firstByDedup.set(m.dedupKey, m.id)
      return { id: m.id, published: true }
    }
    const other = m.dedupKey === null ? undefined : (firstByDedup.get(m.dedupKey) ?? holder.get(m.dedupKey))
    return { id: other ?? m.id, published: false }
  })
}

/** What an adapter tells {@link createSqlitePublisher} about its SQLite driver or ORM. */
export interface SqlitePublisherSpec<TTx> {
  /** Adapter name used in error messages, e.g. `'sqlite'`. */
  readonly name: string
  /**
   * Returns `handle` as a transaction, or throws `OutboxError('NOT_IN_TRANSACTION')` unless it is
   * an open transaction, judged by the library's own public signal. SYNCHRONOUS, and MUST NOT
   * write anything.
   */
  checkTransaction(handle: unknown): TTx
  /**
   * Runs one statement on the transaction's own connection and returns its rows: synchronously
   * (better-sqlite3, Drizzle on better-sqlite3) or as a Promise (Kysely, Prisma).
   */
  all(tx: TTx, statement: SqliteStatement): SqliteRows | Promise<SqliteRows>
  /**
   * `true` when {@link SqlitePublisherSpec.all} runs synchronously on `tx`. Then `publish`
   * validates and writes before it returns, with no await in between (a Standard Schema that
   * validates asynchronously is refused with `INVALID_CONFIG`), and an error raised while the
   * transaction is open is thrown synchronously, so a synchronous transaction rolls back.
   * Default: asynchronous.
   */
  isSynchronous?(tx: TTx): boolean
  /**
   * Whether the transaction of `tx` is still open (better-sqlite3: `db.inTransaction`). The
   * in-process wake of relays is sent once it is `false`. Without it the wake goes out on the next
   * turn of the event loop, possibly before the commit (the relay then finds the write lock taken
   * and retries, or polls).
   */
  inTransaction?(tx: TTx): boolean
}

/** Calls `fn` with the value, or once the Promise resolves. */
function then<T, U>(value: T | Promise<T>, fn: (value: T) => U | Promise<U>): U | Promise<U> {
  return value instanceof Promise ? value.then(fn) : fn(value)
}

/**
 * Builds an adapter's `publish`, `publishMany` and `processOnce` for SQLite on the one publish pipeline (check
 * the transaction, validate, trace, write, map errors): every message is written with one INSERT
 * on the caller's transaction (plus, only when some message's `dedupKey` already existed, one
 * SELECT that finds the rows holding them). Nothing is written when a check fails.
 *
 * With a synchronous driver ({@link SqlitePublisherSpec.isSynchronous}) all of this happens
 * before `publish` returns: the row is written when the call returns, and the returned Promise
 * only carries the result. So `publish` can be called without `await` inside a synchronous
 * transaction such as better-sqlite3's `db.transaction(() => { ... })`. Errors then follow one
 * rule: `NOT_IN_TRANSACTION` (there is no transaction to protect) rejects the returned Promise, like
 * every adapter; any error raised once the transaction is known to be open (invalid message,
 * failed INSERT) is thrown synchronously, so the transaction it was called in rolls back.
 *
 * After a write, relays of this process that listen on the outbox's channel are woken once the
 * transaction ends (the in-process wake, see {@link wakeSqliteAfterTransaction}), when
 * `outbox.notify` is on. With `@opentelemetry/api` the write runs in a PRODUCER span whose W3C
 * `traceparent` goes into each message's headers.
 */
export function createSqlitePublisher<TTx>(spec: SqlitePublisherSpec<TTx>): Publisher<TTx> {
  const run = (tx: TTx, statement: SqliteStatement) => spec.all(tx, statement)
  return createPublishPipeline<TTx>({
    name: spec.name,
    checkTransaction: (handle) => spec.checkTransaction(handle),
    isSynchronous: (tx) => spec.isSynchronous?.(tx) === true,
    write(outbox: Outbox, tx: TTx, prepared: PreparedMessage[]) {
      return then(run(tx, sqlitePublishStatement(outbox, prepared)), (inserted) => {
        const lookup = sqliteDedupStatement(outbox, prepared, inserted)
        const results = (existing?: SqliteRows) => {
          const out = readSqlitePublishResult(prepared, inserted, existing)
          if (outbox.notify && inserted.length > 0) {
            const inTransaction = spec.inTransaction
            wakeSqliteAfterTransaction(
              outbox.channel,
              tx as object,
              inTransaction ? () => inTransaction(tx) : undefined,
            )
          }
          return out
        }
        return lookup ? then(run(tx, lookup), results) : results()
      })
    },
    claimInbox(inbox: Inbox, tx: TTx, id: string) {
      const statement = { sql: sqliteInboxStatements(inbox.table).claim, params: [inbox.consumer, id] }
      return then(run(tx, statement), (rows) => rows.length > 0)
    },
  })
}
