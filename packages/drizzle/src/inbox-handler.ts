import type { Inbox, InboxHandler, InboxMessage } from '@outboxkit/core'
import { createInboxHandler, type OpenTransaction } from '@outboxkit/core/adapter'
import { type AnyDrizzleTransaction, processOnce } from './publish.js'

/** The slice of a Drizzle db that {@link inboxHandler} needs: an asynchronous `transaction`. */
export interface DrizzleTransactional<TTx> {
  transaction<T>(fn: (tx: TTx) => Promise<T>): Promise<T>
}

/**
 * A consumer in one line: returns a function of a message (a relay's `DeliveredMessage`, or
 * `{ id, ... }` built from a broker message) that opens a transaction on your Drizzle db (`db.transaction`; PostgreSQL and MySQL drivers: better-sqlite3 transactions are synchronous, call `processOnce` inside yours), runs
 * `processOnce(inbox, tx, message, () => fn(message, tx, ...rest))` in it and commits; it rolls
 * back and rethrows when `fn` throws (so a relay retries the message). It is a relay handler as it
 * stands, and resolves `{ processed: true, result }` or `{ processed: false }`. See docs/inbox.md.
 *
 * @example
 * ```ts
 * handlers: { 'order.created': inboxHandler(inbox, db, (message, tx) =>
 *   tx.insert(invoices).values({ orderId: message.payload.orderId })) }
 * ```
 * @throws OutboxError `INVALID_CONFIG` at once for something that is not an inbox or no callback;
 * each call: what `processOnce` throws, and whatever `fn` throws.
 */
export function inboxHandler<
  TTx extends AnyDrizzleTransaction,
  M extends InboxMessage,
  A extends unknown[],
  R,
>(
  inbox: Inbox,
  db: DrizzleTransactional<TTx>,
  fn: (message: M, tx: TTx, ...rest: A) => R | Promise<R>,
): InboxHandler<M, A, R> {
  const open: OpenTransaction<AnyDrizzleTransaction> = <T>(work: (tx: AnyDrizzleTransaction) => Promise<T>) =>
    db.transaction((tx) => work(tx))
  return createInboxHandler('drizzle', processOnce, open, inbox, fn as never)
}
