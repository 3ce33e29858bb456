import { OutboxError, type ProcessOnceFn, type PublishFn, type PublishManyFn } from '@outboxkit/core'
import { createSqlitePublisher, formatValue } from '@outboxkit/core/adapter'
import { isSqliteDatabase, prepared, type SqliteDatabase } from './database.js'

const ADAPTER = 'sqlite'

function refuse(what: string): OutboxError {
  return new OutboxError(
    'NOT_IN_TRANSACTION',
    `publish needs a better-sqlite3 Database inside a transaction, got ${what}. Call it inside db.transaction(() => { ...; void publish(outbox, db, message) })() (no await needed: the row is written when publish returns), or after db.exec('BEGIN'). Nothing was written.`,
    { source: ADAPTER },
  )
}

function checkTransaction(handle: unknown): SqliteDatabase {
  if (!isSqliteDatabase(handle)) throw refuse(formatValue(handle))
  if (!handle.open) throw refuse('a closed Database')
  // better-sqlite3's own signal (SQLite's autocommit flag): true inside db.transaction(), after a
  // BEGIN, and false again once the transaction committed or rolled back, however it ended.
  if (!handle.inTransaction) {
    throw refuse(
      'a Database that is not inside a transaction (in autocommit the message would commit on its own)',
    )
  }
  return handle
}

const publisher = createSqlitePublisher<SqliteDatabase>({
  name: ADAPTER,
  checkTransaction,
  all: (db, statement) => prepared(db, statement.sql).all(statement.params),
  isSynchronous: () => true,
  inTransaction: (db) => db.open && db.inTransaction,
})

/**
 * Publishes one message inside the transaction open on a better-sqlite3 `Database`. The INSERT
 * runs before `publish` returns, so it can be called without `await` inside a synchronous
 * `db.transaction(() => { ... })`: the returned Promise only carries the result. Handle it (`void`
 * it, or collect it and await it after the transaction); do not return it from the transaction
 * function, which better-sqlite3 refuses (it rolls back). Errors raised while the transaction is
 * open (an invalid message, a failed INSERT) are thrown synchronously, so the transaction rolls
 * back; `NOT_IN_TRANSACTION` rejects the Promise.
 *
 * @example
 * ```ts
 * db.transaction(() => {
 *   db.prepare('INSERT INTO orders (id) VALUES (?)').run(orderId)
 *   void publish(outbox, db, { topic: 'order.created', payload: { orderId } })
 * })()
 * ```
 * @throws OutboxError `INVALID_MESSAGE` for a bad message, `INVALID_CONFIG` for a topic whose
 * schema validates asynchronously, `DATABASE` when the INSERT fails (thrown synchronously).
 * Rejects with `NOT_IN_TRANSACTION` for anything but a better-sqlite3 Database inside a
 * transaction (a closed one, one in autocommit, another object).
 */
export const publish: PublishFn<SqliteDatabase> = publisher.publish

/**
 * Publishes several messages inside the transaction open on a better-sqlite3 `Database`, in one
 * INSERT, all or nothing, results in the order of `messages`. Same rules as {@link publish}.
 */
export const publishMany: PublishManyFn<SqliteDatabase> = publisher.publishMany

/**
 * Runs `fn` once per message id for the inbox's consumer, inside a better-sqlite3 database inside a transaction (`db.transaction(() => ...)` or `BEGIN`):
 * inserts `(inbox.consumer, message.id)` into the inbox table on `tx` (one statement) and calls
 * `fn` only when that row is new. Resolves `{ processed: true, result }` (`result` is what `fn`
 * returned) or `{ processed: false }` (this consumer already processed the message; `fn` did not
 * run). The row commits or rolls back with your transaction: an error `fn` throws passes through,
 * your transaction rolls back, and the next delivery runs `fn` again. A concurrent transaction
 * with the same id waits for this one to end, then skips (it committed) or runs (it rolled back).
 * Never begins, commits or rolls back; see docs/inbox.md.
 *
 * @example
 * ```ts
 * // In a synchronous transaction: the inbox row is written and fn runs before processOnce returns.
 * db.transaction(() => {
 *   void processOnce(inbox, db, message, () => db.prepare('INSERT INTO invoices (order_id) VALUES (?)').run(orderId))
 * }).immediate()
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the same handles {@link publish} refuses (nothing is
 * written); `INVALID_MESSAGE` for a message without a string `id` (1 to 255 characters);
 * `INVALID_CONFIG` for something that is not an inbox of `defineInbox`, or no callback; `TIMEOUT`
 * and `DATABASE` as for publish. Whatever `fn` throws, unchanged.
 */
export const processOnce: ProcessOnceFn<SqliteDatabase> = publisher.processOnce
