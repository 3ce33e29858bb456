import type { Inbox, InboxHandler, InboxMessage } from '@outboxkit/core'
import { createInboxHandler, type OpenTransaction } from '@outboxkit/core/adapter'
import type { PoolConnection } from 'mysql2/promise'
import { type MysqlTransactionConnection, processOnce } from './publish.js'

/** The slice of a mysql2/promise `Pool` that {@link inboxHandler} needs: `getConnection()`. */
export interface MysqlPoolLike {
  getConnection(): Promise<PoolConnection>
}

/**
 * A consumer in one line: returns a function of a message (a relay's `DeliveredMessage`, or
 * `{ id, ... }` built from a broker message) that opens a transaction on a connection of your mysql2 pool (`beginTransaction` ... `commit`, then released), runs
 * `processOnce(inbox, tx, message, () => fn(message, tx, ...rest))` in it and commits; it rolls
 * back and rethrows when `fn` throws (so a relay retries the message). It is a relay handler as it
 * stands, and resolves `{ processed: true, result }` or `{ processed: false }`. See docs/inbox.md.
 *
 * @example
 * ```ts
 * handlers: { 'order.created': inboxHandler(inbox, pool, (message, conn) =>
 *   conn.query('INSERT INTO invoices (order_id) VALUES (?)', [message.payload.orderId])) }
 * ```
 * @throws OutboxError `INVALID_CONFIG` at once for something that is not an inbox or no callback;
 * each call: what `processOnce` throws, and whatever `fn` throws.
 */
export function inboxHandler<M extends InboxMessage, A extends unknown[], R>(
  inbox: Inbox,
  pool: MysqlPoolLike,
  fn: (message: M, tx: MysqlTransactionConnection, ...rest: A) => R | Promise<R>,
): InboxHandler<M, A, R> {
  const open: OpenTransaction<MysqlTransactionConnection> = async (work) => {
    const conn = await pool.getConnection()
    try {
      await conn.beginTransaction()
      const result = await work(conn)
      await conn.commit()
      conn.release()
      return result
    } catch (err) {
      const failed = await conn.rollback().then(
        () => false,
        () => true,
      )
      if (failed) conn.destroy()
      else conn.release()
      throw err
    }
  }
  return createInboxHandler('mysql', processOnce, open, inbox, fn as never)
}
