import type { Inbox } from '../outbox/define-inbox.js'
import { assertOutbox, type Outbox } from '../outbox/define-outbox.js'
import { type OutboxError, toOutboxError } from '../outbox/errors.js'
import {
  assertMessageArray,
  type PreparedMessage,
  type PublishResult,
  prepareMessages,
  prepareMessagesSync,
} from '../outbox/message.js'
import { tracePublish, tracePublishSync } from '../telemetry/publish-tracing.js'
import { createProcessOnce } from './inbox-pipeline.js'
import type { Publisher, PublishFn, PublishManyFn } from './publisher.js'

// The one publish pipeline every adapter's `publish` and `publishMany` run, whatever the
// database: assert the outbox -> prepare the messages -> check the transaction -> trace -> write
// -> map errors. A dialect only says how to check a handle and how to write prepared messages (a
// PublishWriter); nothing here awaits more than the steps themselves, so publish stays as fast
// as the statement it sends.

/** What a dialect gives {@link createPublishPipeline}: how to check a handle and write messages. */
export interface PublishWriter<TTx> {
  /** Adapter name used in error messages, e.g. `'kysely'`. */
  readonly name: string
  /**
   * Returns `handle` as a transaction, or throws `OutboxError('NOT_IN_TRANSACTION')` unless it is
   * an open transaction. Runs after the messages are prepared. MUST NOT write anything.
   */
  checkTransaction(handle: unknown): TTx | Promise<TTx>
  /**
   * Writes the prepared messages (at least one) on `tx` and returns their results in order.
   * `handle` is what the caller passed, before {@link PublishWriter.checkTransaction}. A
   * rejection becomes an {@link OutboxError} through {@link PublishWriter.toError}.
   */
  write(outbox: Outbox, tx: TTx, messages: PreparedMessage[], handle: unknown): Promise<PublishResult[]>
  /**
   * `processOnce`'s one statement: inserts `(inbox.consumer, id)` on `tx` unless it exists;
   * `true` when it wrote the row (see `InboxClaimWriter.claimInbox`).
   */
  claimInbox(inbox: Inbox, tx: TTx, id: string, handle: unknown): Promise<boolean>
  /** Maps a failed write to an {@link OutboxError}. Default {@link toOutboxError}. */
  toError?(error: unknown, source: string, doing: string): OutboxError
}

/**
 * A {@link PublishWriter} for drivers whose transactions may be synchronous (better-sqlite3):
 * the handle is checked first and synchronously, and on a synchronous transaction the messages
 * are prepared and written before `publish` returns (see {@link createPublishPipeline}).
 */
export interface SyncPublishWriter<TTx> {
  /** Adapter name used in error messages, e.g. `'sqlite'`. */
  readonly name: string
  /**
   * Returns `handle` as a transaction, or throws `OutboxError('NOT_IN_TRANSACTION')`.
   * SYNCHRONOUS, runs first, and MUST NOT write anything.
   */
  checkTransaction(handle: unknown): TTx
  /** `true` when {@link SyncPublishWriter.write} on `tx` writes before it returns. */
  isSynchronous(tx: TTx): boolean
  /**
   * Writes the prepared messages (at least one) on `tx`: synchronously when
   * {@link SyncPublishWriter.isSynchronous} said so (it may still return its results as a
   * Promise when a second statement is needed), else as a Promise.
   */
  write(
    outbox: Outbox,
    tx: TTx,
    messages: PreparedMessage[],
    handle: unknown,
  ): PublishResult[] | Promise<PublishResult[]>
  /** `processOnce`'s one statement, synchronous when {@link SyncPublishWriter.isSynchronous} said so. */
  claimInbox(inbox: Inbox, tx: TTx, id: string, handle: unknown): boolean | Promise<boolean>
  /** Maps a failed write to an {@link OutboxError}. Default {@link toOutboxError}. */
  toError?(error: unknown, source: string, doing: string): OutboxError
}

/**
 * Builds an adapter's `publish`, `publishMany` and `processOnce` from a dialect's writer: validate the outbox
 * and the messages, check the handle is an open transaction, then write every message on it in
 * a PRODUCER span (with `@opentelemetry/api` installed; its W3C `traceparent` goes into each
 * message's headers), mapping a failed write to an {@link OutboxError}. Nothing is written when a
 * check fails, and no statement is sent for a bad message, so the caller's transaction stays
 * usable.
 *
 * With a {@link SyncPublishWriter}, the handle is checked first; on a synchronous transaction
 * everything happens before `publish` returns (the returned Promise only carries the result), so
 * `publish` can be called without `await` inside better-sqlite3's `db.transaction(() => ...)`.
 * Errors then follow one rule: `NOT_IN_TRANSACTION` (there is no transaction to protect) rejects
 * the returned Promise, like every adapter; any error raised once the transaction is known to be
 * open (invalid message, failed INSERT) is thrown synchronously, so that transaction rolls back.
 */
export function createPublishPipeline<TTx>(
  writer: PublishWriter<TTx> | SyncPublishWriter<TTx>,
): Publisher<TTx> {
  const publisher = 'isSynchronous' in writer ? syncCapablePipeline(writer) : asyncPipeline(writer)
  return { ...publisher, processOnce: createProcessOnce<TTx>(writer) }
}

function asyncPipeline<TTx>(writer: PublishWriter<TTx>): Omit<Publisher<TTx>, 'processOnce'> {
  const { name } = writer
  const toError = writer.toError ?? toOutboxError
  const write = async (outbox: Outbox, tx: TTx, messages: PreparedMessage[], handle: unknown) => {
    try {
      return await writer.write(outbox, tx, messages, handle)
    } catch (err) {
      throw toError(err, name, `publish to ${outbox.table.display}`)
    }
  }
  const publish: PublishFn<TTx> = async (outbox, handle, message) => {
    assertOutbox(outbox, name)
    const prepared = await prepareMessages(outbox, [message], name)
    const tx = await writer.checkTransaction(handle)
    const [result] = await tracePublish(outbox, prepared, (traced) => write(outbox, tx, traced, handle))
    return result!
  }
  const publishMany: PublishManyFn<TTx> = async (outbox, handle, messages) => {
    assertOutbox(outbox, name)
    assertMessageArray(messages, name)
    const prepared = await prepareMessages(outbox, messages, name)
    const tx = await writer.checkTransaction(handle)
    if (prepared.length === 0) return []
    return tracePublish(outbox, prepared, (traced) => write(outbox, tx, traced, handle))
  }
  return { publish, publishMany }
}

function syncCapablePipeline<TTx>(writer: SyncPublishWriter<TTx>): Omit<Publisher<TTx>, 'processOnce'> {
  const { name } = writer
  const toError = writer.toError ?? toOutboxError
  /** Runs the write, mapping a synchronous throw or a rejection alike. */
  const write = (outbox: Outbox, tx: TTx, messages: PreparedMessage[], handle: unknown) => {
    const failed = (err: unknown) => toError(err, name, `publish to ${outbox.table.display}`)
    let written: PublishResult[] | Promise<PublishResult[]>
    try {
      written = writer.write(outbox, tx, messages, handle)
    } catch (err) {
      throw failed(err)
    }
    return written instanceof Promise
      ? written.catch((err: unknown) => {
          throw failed(err)
        })
      : written
  }
  function publishAll(
    outbox: Outbox,
    handle: unknown,
    messages: readonly unknown[],
    many: boolean,
  ): Promise<PublishResult[]> {
    let tx: TTx
    try {
      tx = writer.checkTransaction(handle)
    } catch (err) {
      return Promise.reject(err)
    }
    if (!writer.isSynchronous(tx)) {
      return (async () => {
        assertOutbox(outbox, name)
        if (many) assertMessageArray(messages, name)
        const prepared = await prepareMessages(outbox, messages, name)
        if (prepared.length === 0) return []
        return tracePublish(outbox, prepared, async (traced) => write(outbox, tx, traced, handle))
      })()
    }
    // The transaction is open: from here every error is thrown synchronously (see above).
    assertOutbox(outbox, name)
    if (many) assertMessageArray(messages, name)
    const prepared = prepareMessagesSync(outbox, messages, name)
    if (prepared.length === 0) return Promise.resolve([])
    return Promise.resolve(tracePublishSync(outbox, prepared, (traced) => write(outbox, tx, traced, handle)))
  }
  return {
    publish: (outbox, handle, message) => publishAll(outbox, handle, [message], false).then((r) => r[0]!),
    publishMany: (outbox, handle, messages) =>
      publishAll(outbox, handle, messages as readonly unknown[], true),
  }
}
