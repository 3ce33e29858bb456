import {
  isPostgresPublishRefused,
  type PostgresPublishStatement,
  postgresPublishStatement,
  readPostgresPublishResult,
} from '../dialect/postgres/publish-statement.js'
import { assertOutbox, type Outbox } from '../outbox/define-outbox.js'
import { toOutboxError } from '../outbox/errors.js'
import {
  assertMessageArray,
  type PreparedMessage,
  type PublishMessage,
  type PublishResult,
  prepareMessages,
} from '../outbox/message.js'
import { tracePublish } from '../telemetry/publish-tracing.js'

/** What an adapter tells {@link createPostgresPublisher} about its driver or ORM. */
export interface PostgresPublisherSpec<TTx> {
  /** Adapter name used in error messages, e.g. `'kysely'`. */
  readonly name: string
  /**
   * Returns `handle` as a transaction, or throws `OutboxError('NOT_IN_TRANSACTION')` unless it is
   * an open transaction, judged by the library's own public signal. MUST NOT write anything.
   */
  checkTransaction(handle: unknown): TTx | Promise<TTx>
  /** Runs the statement on the transaction's own connection and returns the result rows. */
  execute(handle: TTx, statement: PostgresPublishStatement): Promise<readonly Record<string, unknown>[]>
  /**
   * The adapter sends `POSTGRES_TRANSACTION_MARKER` on the same connection right before the
   * statement (pipelined where the driver can), and wants the guarded statement, which writes
   * nothing unless the marker's transaction is still open. `refuse` builds the error then.
   */
  guarded?: { refuse(): Error }
}

/** The `publish` function every adapter exports. */
export type PublishFn<TTx> = <O extends Outbox<any>>(
  outbox: O,
  tx: TTx,
  message: PublishMessage<O>,
) => Promise<PublishResult>
/** The `publishMany` function every adapter exports. */
export type PublishManyFn<TTx> = <O extends Outbox<any>>(
  outbox: O,
  tx: TTx,
  messages: readonly PublishMessage<O>[],
) => Promise<PublishResult[]>

/** The `publish` and `publishMany` pair an adapter exports. */
export interface Publisher<TTx> {
  publish: PublishFn<TTx>
  publishMany: PublishManyFn<TTx>
}

/**
 * `publish` and `publishMany` that pick, on every call, the publisher for the transaction handle
 * they are given: for adapters that serve several dialects (the ORM adapters choose by the
 * handle's dialect). The choice is synchronous, so a synchronous publisher (SQLite) still writes
 * before the call returns; a choice that throws (an `OutboxError` for an unsupported dialect)
 * becomes the returned promise's rejection.
 */
export function routePublisher<TTx>(publisherFor: (tx: TTx) => Publisher<TTx>): Publisher<TTx> {
  return {
    publish: (outbox, tx, message) => {
      let publisher: Publisher<TTx>
      try {
        publisher = publisherFor(tx)
      } catch (err) {
        return Promise.reject(err)
      }
      return publisher.publish(outbox, tx, message)
    },
    publishMany: (outbox, tx, messages) => {
      let publisher: Publisher<TTx>
      try {
        publisher = publisherFor(tx)
      } catch (err) {
        return Promise.reject(err)
      }
      return publisher.publishMany(outbox, tx, messages)
    },
  }
}

/**
 * Builds an adapter's `publish` and `publishMany` for PostgreSQL: validate the outbox and the
 * messages, check the handle is an open transaction, then write every message (and the relay's
 * NOTIFY wake-up) with one statement on that transaction. Nothing is written when a check fails.
 * With `@opentelemetry/api` installed, the statement runs in a PRODUCER span whose W3C
 * `traceparent` goes into each message's headers (see docs/operations.md, "Tracing").
 */
export function createPostgresPublisher<TTx>(spec: PostgresPublisherSpec<TTx>): {
  publish: PublishFn<TTx>
  publishMany: PublishManyFn<TTx>
} {
  const { name } = spec
  async function write(outbox: Outbox, tx: TTx, prepared: PreparedMessage[]): Promise<PublishResult[]> {
    const statement = postgresPublishStatement(outbox, prepared, { guarded: spec.guarded !== undefined })
    let rows: readonly Record<string, unknown>[]
    try {
      rows = await spec.execute(tx, statement)
    } catch (err) {
      throw toOutboxError(err, name, `publish to ${outbox.table.display}`)
    }
    if (spec.guarded && isPostgresPublishRefused(rows)) throw spec.guarded.refuse()
    return readPostgresPublishResult(prepared, rows)
  }
  const publish: PublishFn<TTx> = async (outbox, tx, message) => {
    assertOutbox(outbox, name)
    const prepared = await prepareMessages(outbox, [message], name)
    const checked = await spec.checkTransaction(tx)
    const [result] = await tracePublish(outbox, prepared, (traced) => write(outbox, checked, traced))
    return result!
  }
  const publishMany: PublishManyFn<TTx> = async (outbox, tx, messages) => {
    assertOutbox(outbox, name)
    assertMessageArray(messages, name)
    const prepared = await prepareMessages(outbox, messages, name)
    const checked = await spec.checkTransaction(tx)
    if (prepared.length === 0) return []
    return tracePublish(outbox, prepared, (traced) => write(outbox, checked, traced))
  }
  return { publish, publishMany }
}
