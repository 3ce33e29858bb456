import type { Inbox, InboxHandler, InboxMessage } from '@outboxkit/core'
import { createInboxHandler, type OpenTransaction } from '@outboxkit/core/adapter'
import { type PgliteTransaction, processOnce } from './publish.js'

/** The slice of a PGlite instance that {@link inboxHandler} needs: `transaction`. */
export interface PgliteTransactional {
  transaction<T>(fn: (tx: PgliteTransaction) => Promise<T>): Promise<T>
}

/**
 * A consumer in one line: returns a function of a message (a relay's `DeliveredMessage`, or
 * `{ id, ... }` built from a broker message) that opens a transaction on your PGlite instance (`db.transaction`), runs
 * `processOnce(inbox, tx, message, () => fn(message, tx, ...rest))` in it and commits; it rolls
 * back and rethrows when `fn` throws (so a relay retries the message). It is a relay handler as it
 * stands, and resolves `{ processed: true, result }` or `{ processed: false }`. See docs/inbox.md.
 *
 * @example
 * ```ts
 * handlers: { 'order.created': inboxHandler(inbox, db, (message, tx) =>
 *   tx.query('INSERT INTO invoices (order_id) VALUES ($1)', [message.payload.orderId])) }
 * ```
 * @throws OutboxError `INVALID_CONFIG` at once for something that is not an inbox or no callback;
 * each call: what `processOnce` throws, and whatever `fn` throws.
 */
export function inboxHandler<M extends InboxMessage, A extends unknown[], R>(
  inbox: Inbox,
  db: PgliteTransactional,
  fn: (message: M, tx: PgliteTransaction, ...rest: A) => R | Promise<R>,
): InboxHandler<M, A, R> {
  const open: OpenTransaction<PgliteTransaction> = (work) => db.transaction(work)
  return createInboxHandler('pglite', processOnce, open, inbox, fn as never)
}
