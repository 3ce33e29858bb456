import type { Outbox } from '../outbox/define-outbox.js'
import type { PublishMessage, PublishResult } from '../outbox/message.js'
import type { ProcessOnceFn } from './inbox-pipeline.js'

// The shape of what every adapter exports (publish, publishMany), and routePublisher for the
// adapters that serve several dialects. The steps behind them are the one publish pipeline
// (publish-pipeline.ts); each dialect's writer lives in dialect/<name>/publisher.ts.

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

/** The `publish`, `publishMany` and `processOnce` an adapter exports. */
export interface Publisher<TTx> {
  publish: PublishFn<TTx>
  publishMany: PublishManyFn<TTx>
  /** The consumer side: runs a callback once per message id in the caller's transaction (see docs/inbox.md). */
  processOnce: ProcessOnceFn<TTx>
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
    processOnce: (inbox, tx, message, fn) => {
      let publisher: Publisher<TTx>
      try {
        publisher = publisherFor(tx)
      } catch (err) {
        return Promise.reject(err)
      }
      return publisher.processOnce(inbox, tx, message, fn)
    },
  }
}
