import type { Inbox, InboxHandler, InboxMessage } from '@outboxkit/core'
import { createInboxHandler, type OpenTransaction } from '@outboxkit/core/adapter'
import { type PgTransactionClient, processOnce } from './publish.js'

/** The slice of a pg `Pool` that {@link inboxHandler} needs: `connect()` hands out a client. */
export interface PgPoolLike {
  connect(): Promise<PgTransactionClient & { release(err?: Error | boolean): void }>
}

/**
 * A consumer in one line: returns a function of a message (a relay's `DeliveredMessage`, or
 * `{ id, ... }` built from a broker message) that opens a transaction on a client checked out of your pg `Pool` (`BEGIN` ... `COMMIT`, then released), runs
 * `processOnce(inbox, tx, message, () => fn(message, tx, ...rest))` in it and commits; it rolls
 * back and rethrows when `fn` throws (so a relay retries the message). It is a relay handler as it
 * stands, and resolves `{ processed: true, result }` or `{ processed: false }`. See docs/inbox.md.
 *
 * @example
 * ```ts
 * handlers: { 'order.created': inboxHandler(inbox, pool, (message, client) =>
 *   client.query('INSERT INTO invoices (order_id) VALUES ($1)', [message.payload.orderId])) }
 * ```
 * @throws OutboxError `INVALID_CONFIG` at once for something that is not an inbox or no callback;
 * each call: what `processOnce` throws, and whatever `fn` throws.
 */
export function inboxHandler<M extends InboxMessage, A extends unknown[], R>(
  inbox: Inbox,
  pool: PgPoolLike,
  fn: (message: M, tx: PgTransactionClient, ...rest: A) => R | Promise<R>,
): InboxHandler<M, A, R> {
  const open: OpenTransaction<PgTransactionClient> = async (work) => {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      const result = await work(client)
      await client.query('COMMIT')
      client.release()
      return result
    } catch (err) {
      // A client whose ROLLBACK failed is broken: destroy it instead of returning it to the pool.
      const failed = await client.query('ROLLBACK').then(
        () => false,
        () => true,
      )
      client.release(failed)
      throw err
    }
  }
  return createInboxHandler('pg', processOnce, open, inbox, fn as never)
}
