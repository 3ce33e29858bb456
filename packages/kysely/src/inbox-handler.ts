import type { Inbox, InboxHandler, InboxMessage } from '@outboxkit/core'
import { createInboxHandler, type OpenTransaction } from '@outboxkit/core/adapter'
import type { Kysely, Transaction } from 'kysely'
import { processOnce } from './publish.js'
import type { KyselyTransaction } from './transaction.js'

/**
 * A consumer in one line: returns a function of a message (a relay's `DeliveredMessage`, or
 * `{ id, ... }` built from a broker message) that opens a transaction on your Kysely instance (`db.transaction().execute`), runs
 * `processOnce(inbox, tx, message, () => fn(message, tx, ...rest))` in it and commits; it rolls
 * back and rethrows when `fn` throws (so a relay retries the message). It is a relay handler as it
 * stands, and resolves `{ processed: true, result }` or `{ processed: false }`. See docs/inbox.md.
 *
 * @example
 * ```ts
 * handlers: { 'order.created': inboxHandler(inbox, db, (message, trx) =>
 *   trx.insertInto('invoices').values({ orderId: message.payload.orderId }).execute()) }
 * ```
 * @throws OutboxError `INVALID_CONFIG` at once for something that is not an inbox or no callback;
 * each call: what `processOnce` throws, and whatever `fn` throws.
 */
export function inboxHandler<DB, M extends InboxMessage, A extends unknown[], R>(
  inbox: Inbox,
  db: Kysely<DB>,
  fn: (message: M, tx: Transaction<DB>, ...rest: A) => R | Promise<R>,
): InboxHandler<M, A, R> {
  const open: OpenTransaction<KyselyTransaction> = <T>(work: (tx: KyselyTransaction) => Promise<T>) =>
    db.transaction().execute((trx) => work(trx as unknown as KyselyTransaction))
  return createInboxHandler('kysely', processOnce, open, inbox, fn as never)
}
