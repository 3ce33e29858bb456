import type { Inbox, InboxHandler, InboxMessage } from '@outboxkit/core'
import { createInboxHandler, type OpenTransaction } from '@outboxkit/core/adapter'
import { processOnce } from './publish.js'
import type { PostgresJsTransaction } from './transaction.js'

/** The slice of a postgres.js `sql` that {@link inboxHandler} needs: `begin`. */
export interface PostgresJsBegin {
  begin(fn: (tx: any) => Promise<unknown>): Promise<unknown>
}

/**
 * A consumer in one line: returns a function of a message (a relay's `DeliveredMessage`, or
 * `{ id, ... }` built from a broker message) that opens a transaction on your postgres.js `sql` (`sql.begin`), runs
 * `processOnce(inbox, tx, message, () => fn(message, tx, ...rest))` in it and commits; it rolls
 * back and rethrows when `fn` throws (so a relay retries the message). It is a relay handler as it
 * stands, and resolves `{ processed: true, result }` or `{ processed: false }`. See docs/inbox.md.
 *
 * @example
 * ```ts
 * handlers: { 'order.created': inboxHandler(inbox, sql, (message, tx) =>
 *   tx`INSERT INTO invoices (order_id) VALUES (${message.payload.orderId})`) }
 * ```
 * @throws OutboxError `INVALID_CONFIG` at once for something that is not an inbox or no callback;
 * each call: what `processOnce` throws, and whatever `fn` throws.
 */
export function inboxHandler<M extends InboxMessage, A extends unknown[], R>(
  inbox: Inbox,
  sql: PostgresJsBegin,
  fn: (message: M, tx: PostgresJsTransaction, ...rest: A) => R | Promise<R>,
): InboxHandler<M, A, R> {
  const open: OpenTransaction<PostgresJsTransaction> = <T>(work: (tx: PostgresJsTransaction) => Promise<T>) =>
    sql.begin(work) as Promise<T>
  return createInboxHandler('postgres-js', processOnce, open, inbox, fn as never)
}
