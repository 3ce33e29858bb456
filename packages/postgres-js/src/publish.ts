import type { ProcessOnceFn } from '@outboxkit/core'
import {
  createPostgresPublisher,
  POSTGRES_TRANSACTION_MARKER,
  snakeCaseRows,
  toOutboxError,
} from '@outboxkit/core/adapter'
import { runStatement } from './statement.js'
import { ADAPTER, checkTransaction, type PostgresJsTransaction, refuse } from './transaction.js'

const ENDED =
  'a transaction sql whose transaction already committed or rolled back (postgres.js would run the statement in autocommit)'

const publisher = createPostgresPublisher<PostgresJsTransaction>({
  name: ADAPTER,
  checkTransaction,
  guarded: { refuse: () => refuse(ENDED) },
  async execute(tx, statement) {
    // Both are queued at once, so postgres.js pipelines them on the transaction's connection: the
    // marker sets a transaction-local flag and the guarded INSERT writes only if it still sees it,
    // i.e. only if both ran in the same open transaction. Nothing else can end the transaction
    // between them unnoticed: a COMMIT slipped in between resets the flag.
    const [marker, insert] = await Promise.allSettled([
      tx.unsafe(POSTGRES_TRANSACTION_MARKER).simple(),
      runStatement(tx, statement.text, statement.values),
    ])
    for (const result of [marker, insert]) {
      if (result.status === 'rejected' && (result.reason as { code?: unknown } | null)?.code === '25P02') {
        throw refuse(
          'a transaction that failed (an earlier statement raised an error, SQLSTATE 25P02); it can only roll back',
        )
      }
    }
    if (marker.status === 'rejected')
      throw toOutboxError(marker.reason, ADAPTER, 'the transaction marker of publish')
    if (insert.status === 'rejected') throw insert.reason
    return snakeCaseRows(insert.value)
  },
})

/**
 * Publishes one message inside a postgres.js transaction: the INSERT (and the relay's NOTIFY
 * wake-up) run as one statement on `tx`, so the message commits or rolls back with it.
 *
 * Cost: one round trip. postgres.js exposes no transaction state, and a `tx` kept after its
 * transaction ended still runs queries, in autocommit, so the database decides: publish pipelines
 * a transaction-local marker (`set_config('outboxkit.in_tx', 'on', true)`) with a guarded INSERT
 * that writes only while the marker is still set. In autocommit the marker is gone when its own
 * statement ends, so the INSERT writes nothing and publish throws `NOT_IN_TRANSACTION`; a COMMIT
 * that slips in between (a publish not awaited before the callback returns) is caught the same way.
 * The INSERT is a prepared statement: its first use on a connection costs one more round trip.
 *
 * @example
 * ```ts
 * await sql.begin(async (tx) => {
 *   await tx`INSERT INTO orders ${tx(order)}`
 *   await publish(outbox, tx, { topic: 'order.created', payload: { orderId: order.id } })
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the root `sql`, a reserved connection, a `tx` whose
 * transaction already committed or rolled back, or a failed transaction (nothing is written);
 * `INVALID_MESSAGE` for a bad message; `TIMEOUT` when the server's `statement_timeout` fires;
 * `DATABASE` otherwise.
 */
export const publish = publisher.publish

/**
 * Publishes several messages inside a postgres.js transaction in one statement, all or nothing,
 * results in the order of `messages`. Same check, cost (one round trip for the whole batch) and
 * errors as {@link publish}.
 *
 * @example
 * ```ts
 * const [a, b] = await sql.begin((tx) => publishMany(outbox, tx, [msgA, msgB]))
 * ```
 */
export const publishMany = publisher.publishMany

/**
 * Runs `fn` once per message id for the inbox's consumer, inside a postgres.js transaction (`sql.begin`):
 * inserts `(inbox.consumer, message.id)` into the inbox table on `tx` (one statement) and calls
 * `fn` only when that row is new. Resolves `{ processed: true, result }` (`result` is what `fn`
 * returned) or `{ processed: false }` (this consumer already processed the message; `fn` did not
 * run). The row commits or rolls back with your transaction: an error `fn` throws passes through,
 * your transaction rolls back, and the next delivery runs `fn` again. A concurrent transaction
 * with the same id waits for this one to end, then skips (it committed) or runs (it rolled back).
 * Never begins, commits or rolls back; see docs/inbox.md.
 *
 * @example
 * ```ts
 * await sql.begin(async (tx) => {
 *   await processOnce(inbox, tx, message, () => tx`INSERT INTO invoices ${tx({ orderId: message.payload.orderId })}`)
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the same handles {@link publish} refuses (nothing is
 * written); `INVALID_MESSAGE` for a message without a string `id` (1 to 255 characters);
 * `INVALID_CONFIG` for something that is not an inbox of `defineInbox`, or no callback; `TIMEOUT`
 * and `DATABASE` as for publish. Whatever `fn` throws, unchanged.
 */
export const processOnce: ProcessOnceFn<PostgresJsTransaction> = publisher.processOnce
