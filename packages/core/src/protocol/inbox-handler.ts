import {
  assertInbox,
  assertProcessFn,
  type Inbox,
  type InboxMessage,
  type ProcessOnceResult,
} from '../outbox/define-inbox.js'
import type { ProcessOnceFn } from './inbox-pipeline.js'

/** Runs `fn` in a new transaction on the user's database handle: commit on resolve, roll back on throw. */
export type OpenTransaction<TTx> = <T>(fn: (tx: TTx) => Promise<T>) => Promise<T>

/**
 * What an adapter's `inboxHandler` returns: a function of a message (a relay's `DeliveredMessage`,
 * or `{ id, ... }` built from a broker message) and whatever else its caller passes (the relay's
 * `{ signal }`), that runs the work once per message id and resolves what `processOnce` resolved.
 * It is a relay handler as it stands.
 */
export type InboxHandler<M extends InboxMessage, A extends unknown[], R> = (
  message: M,
  ...rest: A
) => Promise<ProcessOnceResult<Awaited<R>>>

/**
 * The usual consumer, in one call: each call opens a transaction with `open`, runs
 * `processOnce(inbox, tx, message, () => fn(message, tx, ...rest))` in it, and commits (or rolls
 * back when `fn` throws, and rethrows, so a relay retries the message). Adapters export it bound
 * to their own transaction API as `inboxHandler(inbox, db, fn)`.
 */
export function createInboxHandler<TTx, M extends InboxMessage, A extends unknown[], R>(
  source: string,
  processOnce: ProcessOnceFn<TTx>,
  open: OpenTransaction<TTx>,
  inbox: Inbox,
  fn: (message: M, tx: TTx, ...rest: A) => R | Promise<R>,
): InboxHandler<M, A, R> {
  assertInbox(inbox, source)
  assertProcessFn(fn, source, 'inboxHandler needs a callback as its third argument')
  return (message, ...rest) => open((tx) => processOnce(inbox, tx, message, () => fn(message, tx, ...rest)))
}
