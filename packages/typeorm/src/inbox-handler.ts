import type { Inbox, InboxHandler, InboxMessage } from '@outboxkit/core'
import { createInboxHandler, type OpenTransaction } from '@outboxkit/core/adapter'
import type { EntityManager } from 'typeorm'
import { processOnce } from './publish.js'

/** The slice of a TypeORM DataSource that {@link inboxHandler} needs: `transaction`. */
export interface TypeormTransactional {
  transaction<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T>
}

/**
 * A consumer in one line: returns a function of a message (a relay's `DeliveredMessage`, or
 * `{ id, ... }` built from a broker message) that opens a transaction on your TypeORM DataSource (`dataSource.transaction`: the callback gets its EntityManager), runs
 * `processOnce(inbox, tx, message, () => fn(message, tx, ...rest))` in it and commits; it rolls
 * back and rethrows when `fn` throws (so a relay retries the message). It is a relay handler as it
 * stands, and resolves `{ processed: true, result }` or `{ processed: false }`. See docs/inbox.md.
 *
 * @example
 * ```ts
 * handlers: { 'order.created': inboxHandler(inbox, dataSource, (message, manager) =>
 *   manager.insert(Invoice, { orderId: message.payload.orderId })) }
 * ```
 * @throws OutboxError `INVALID_CONFIG` at once for something that is not an inbox or no callback;
 * each call: what `processOnce` throws, and whatever `fn` throws.
 */
export function inboxHandler<M extends InboxMessage, A extends unknown[], R>(
  inbox: Inbox,
  dataSource: TypeormTransactional,
  fn: (message: M, tx: EntityManager, ...rest: A) => R | Promise<R>,
): InboxHandler<M, A, R> {
  const open: OpenTransaction<EntityManager> = (work) => dataSource.transaction(work)
  return createInboxHandler('typeorm', processOnce, open, inbox, fn as never)
}
