import type { Inbox, InboxHandler, InboxMessage } from '@outboxkit/core'
import { createInboxHandler, type OpenTransaction } from '@outboxkit/core/adapter'
import type { SqliteDatabase } from './database.js'
import { processOnce } from './publish.js'

/** Per connection, the end of its queue of handler transactions (one transaction per connection at a time). */
const queues = new WeakMap<SqliteDatabase, Promise<unknown>>()

/**
 * A consumer in one line: returns a function of a message (a relay's `DeliveredMessage`, or
 * `{ id, ... }` built from a broker message) that runs `BEGIN IMMEDIATE` on `db`,
 * `processOnce(inbox, db, message, () => fn(message, db, ...rest))`, then `COMMIT`; it rolls back
 * and rethrows when `fn` throws (so a relay retries the message). `fn` may be asynchronous: the
 * transaction stays open across its awaits, so calls on one connection take turns (a queue per
 * connection), and other code on that connection waits for them. Give it a connection of its own
 * (`new Database(file)`), not the one your relay's backend uses. `BEGIN IMMEDIATE` takes the write
 * lock first, so the inbox INSERT never meets `SQLITE_BUSY` mid-transaction; while another
 * connection holds it, better-sqlite3 waits up to its busy `timeout`, blocking the thread. So a
 * second connection of the same process that writes while this transaction awaits blocks the event
 * loop and stalls the process until its timeout (docs/inbox.md, "On SQLite"): with other writers
 * in the process, prefer a synchronous callback.
 *
 * @example
 * ```ts
 * handlers: { 'order.created': inboxHandler(inbox, db, (message, db) =>
 *   db.prepare('INSERT INTO invoices (order_id) VALUES (?)').run(message.payload.orderId)) }
 * ```
 * @throws OutboxError `INVALID_CONFIG` at once for something that is not an inbox or no callback;
 * each call: what `processOnce` throws, and whatever `fn` throws.
 */
export function inboxHandler<M extends InboxMessage, A extends unknown[], R>(
  inbox: Inbox,
  db: SqliteDatabase,
  fn: (message: M, db: SqliteDatabase, ...rest: A) => R | Promise<R>,
): InboxHandler<M, A, R> {
  const open: OpenTransaction<SqliteDatabase> = (work) => {
    const run = (queues.get(db) ?? Promise.resolve()).then(async () => {
      db.exec('BEGIN IMMEDIATE')
      try {
        const result = await work(db)
        db.exec('COMMIT')
        return result
      } catch (err) {
        if (db.inTransaction) db.exec('ROLLBACK')
        throw err
      }
    })
    queues.set(
      db,
      run.catch(() => {}),
    )
    return run
  }
  return createInboxHandler('sqlite', processOnce, open, inbox, fn as never)
}
