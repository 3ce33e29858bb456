import {
  assertInbox,
  assertProcessFn,
  type Inbox,
  type InboxMessage,
  inboxMessageId,
  type ProcessOnceResult,
} from '../outbox/define-inbox.js'
import { isOutboxError, OutboxError, toOutboxError } from '../outbox/errors.js'

// The one processOnce pipeline every adapter's `processOnce` runs, whatever the database, built
// from the same writer as its publish (publish-pipeline.ts): assert the inbox -> check the
// message id and the callback -> check the transaction (the same check, the same refusals as
// publish) -> one INSERT of (consumer, message id) on the caller's transaction -> run the
// callback only when that INSERT wrote the row. Nothing here opens, commits or rolls back.

/** The `processOnce` function every adapter exports. */
export type ProcessOnceFn<TTx> = <T>(
  inbox: Inbox,
  tx: TTx,
  message: InboxMessage,
  fn: () => T | Promise<T>,
) => Promise<ProcessOnceResult<Awaited<T>>>

/** What the processOnce pipeline needs of a dialect's writer (see `PublishWriter`). */
export interface InboxClaimWriter<TTx> {
  readonly name: string
  checkTransaction(handle: unknown): TTx | Promise<TTx>
  /**
   * Inserts `(inbox.consumer, id)` into the inbox table on `tx` unless the row exists, in one
   * statement; `true` when it wrote the row. A concurrent transaction that inserted the same key
   * and has not ended makes it wait: it then returns `false` when that one committed, and writes
   * (returns `true`) when it rolled back.
   */
  claimInbox(inbox: Inbox, tx: TTx, id: string, handle: unknown): boolean | Promise<boolean>
  /** `true` when {@link InboxClaimWriter.claimInbox} on `tx` writes before it returns (better-sqlite3). */
  isSynchronous?(tx: TTx): boolean
  toError?(error: unknown, source: string, doing: string): OutboxError
}

/**
 * A refusal of the transaction check, worded for processOnce: the adapters' checks are shared
 * with publish and name it (`publish needs ...`).
 */
function forProcessOnce(err: unknown): unknown {
  if (!isOutboxError(err, 'NOT_IN_TRANSACTION')) return err
  const prefix = `[outboxkit] [${err.source}] `
  const text = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message
  if (!text.startsWith('publish ')) return err
  return new OutboxError('NOT_IN_TRANSACTION', `processOnce ${text.slice('publish '.length)}`, {
    source: err.source,
    cause: err.cause,
  })
}

const SKIPPED: ProcessOnceResult<never> = Object.freeze({ processed: false })

/** The result of a callback that ran: `{ processed: true, result }`, once a Promise resolved. */
function ran<T>(result: T | Promise<T>): Promise<ProcessOnceResult<Awaited<T>>> {
  return Promise.resolve(result).then((r) => ({ processed: true, result: r as Awaited<T> }))
}

/**
 * Builds an adapter's `processOnce` from the writer its publish uses. The checks run before any
 * statement (a wrong inbox, a message without a string id, a missing callback, a handle that is
 * not an open transaction: `OutboxError`, nothing written, the transaction still usable); then
 * ONE statement inserts the inbox row; the callback runs only when it wrote the row. An error the
 * callback throws passes through unchanged: the caller's transaction rolls back with it, the inbox
 * row with it, and a later delivery runs the callback again.
 *
 * On a synchronous transaction (better-sqlite3) the check, the INSERT and the call of the callback
 * happen before `processOnce` returns, and an error once the transaction is known to be open is
 * thrown synchronously, so `db.transaction(() => ...)` rolls back (the rule of publish).
 */
export function createProcessOnce<TTx>(writer: InboxClaimWriter<TTx>): ProcessOnceFn<TTx> {
  const { name } = writer
  const toError = writer.toError ?? toOutboxError
  const claimFailed =
    (inbox: Inbox) =>
    (err: unknown): never => {
      const refusal = forProcessOnce(err)
      throw refusal !== err ? refusal : toError(err, name, `processOnce on ${inbox.table.display}`)
    }
  const checkArgs = (inbox: unknown, message: unknown, fn: unknown): string => {
    assertInbox(inbox, name)
    const id = inboxMessageId(message, name)
    assertProcessFn(fn, name)
    return id
  }
  const asyncRun = async (inbox: Inbox, tx: TTx, message: unknown, fn: () => unknown, handle: unknown) => {
    const id = checkArgs(inbox, message, fn)
    const inserted = await Promise.resolve()
      .then(() => writer.claimInbox(inbox, tx, id, handle))
      .catch(claimFailed(inbox))
    return inserted ? ran(fn()) : SKIPPED
  }
  if (writer.isSynchronous) {
    const isSynchronous = writer.isSynchronous.bind(writer)
    return ((inbox: Inbox, handle: unknown, message: unknown, fn: () => unknown) => {
      let tx: TTx
      try {
        tx = writer.checkTransaction(handle) as TTx
      } catch (err) {
        return Promise.reject(forProcessOnce(err))
      }
      if (!isSynchronous(tx)) return asyncRun(inbox, tx, message, fn, handle)
      // The transaction is open: from here every error is thrown synchronously.
      const id = checkArgs(inbox, message, fn)
      let inserted: boolean | Promise<boolean>
      try {
        inserted = writer.claimInbox(inbox, tx, id, handle)
      } catch (err) {
        return claimFailed(inbox)(err)
      }
      if (inserted instanceof Promise) {
        return inserted.then((ok) => (ok ? ran(fn()) : SKIPPED), claimFailed(inbox))
      }
      return inserted ? ran(fn()) : Promise.resolve(SKIPPED)
    }) as ProcessOnceFn<TTx>
  }
  return (async (inbox: Inbox, handle: unknown, message: unknown, fn: () => unknown) => {
    checkArgs(inbox, message, fn)
    let tx: TTx
    try {
      tx = await writer.checkTransaction(handle)
    } catch (err) {
      throw forProcessOnce(err)
    }
    return asyncRun(inbox, tx, message, fn, handle)
  }) as ProcessOnceFn<TTx>
}
