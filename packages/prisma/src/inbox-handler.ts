import type { Inbox, InboxHandler, InboxMessage } from '@outboxkit/core'
import { createInboxHandler, type OpenTransaction } from '@outboxkit/core/adapter'
import { processOnce } from './publish.js'
import type { PrismaTransactionClient } from './transaction-client.js'

/** The slice of a PrismaClient that {@link inboxHandler} needs: the interactive `$transaction`. */
export interface PrismaTransactional<TTx> {
  $transaction<T>(fn: (tx: TTx) => Promise<T>, options?: { maxWait?: number; timeout?: number }): Promise<T>
}

/**
 * A consumer in one line: returns a function of a message (a relay's `DeliveredMessage`, or
 * `{ id, ... }` built from a broker message) that opens a transaction on your PrismaClient (an interactive `$transaction`), runs
 * `processOnce(inbox, tx, message, () => fn(message, tx, ...rest))` in it and commits; it rolls
 * back and rethrows when `fn` throws (so a relay retries the message). It is a relay handler as it
 * stands, and resolves `{ processed: true, result }` or `{ processed: false }`. See docs/inbox.md.
 *
 * @example
 * ```ts
 * handlers: { 'order.created': inboxHandler(inbox, prisma, (message, tx) =>
 *   tx.invoice.create({ data: { orderId: message.payload.orderId } })) }
 * ```
 * @throws OutboxError `INVALID_CONFIG` at once for something that is not an inbox or no callback;
 * each call: what `processOnce` throws, and whatever `fn` throws.
 */
export function inboxHandler<TTx, M extends InboxMessage, A extends unknown[], R>(
  inbox: Inbox,
  prisma: PrismaTransactional<TTx>,
  fn: (message: M, tx: TTx, ...rest: A) => R | Promise<R>,
): InboxHandler<M, A, R> {
  const open: OpenTransaction<PrismaTransactionClient> = <T>(
    work: (tx: PrismaTransactionClient) => Promise<T>,
  ) => prisma.$transaction((tx) => work(tx as unknown as PrismaTransactionClient))
  return createInboxHandler('prisma', processOnce, open, inbox, fn as never)
}
