import { createPostgresPublisher } from '@outboxkit/core'
import { snakeCaseRows } from './rows.js'
import { runStatement } from './statement.js'
import { ADAPTER, checkTransaction, type PostgresJsTransaction } from './transaction.js'

const publisher = createPostgresPublisher<PostgresJsTransaction>({
  name: ADAPTER,
  checkTransaction,
  async execute(tx, statement) {
    return snakeCaseRows(await runStatement(tx, statement.text, statement.values))
  },
})

/**
 * Publishes one message inside a postgres.js transaction: the INSERT (and the relay's NOTIFY
 * wake-up) run as one statement on `tx`, so the message commits or rolls back with it.
 *
 * Cost: two round trips on the transaction's connection, one after the other. The first is the
 * transaction check (`SAVEPOINT outboxkit_probe; RELEASE SAVEPOINT outboxkit_probe`): postgres.js
 * exposes no transaction state, and a `tx` kept after its transaction ended still runs queries, in
 * autocommit, so only the database can tell. The second is the INSERT (a prepared statement after
 * its first use on a connection). The check cannot share the INSERT's round trip: postgres.js
 * ends every statement with its own Sync, so a pipelined INSERT would run even when the check
 * fails.
 *
 * Always `await` it inside the callback: a publish still running when the callback returns may
 * have its INSERT sent after postgres.js' COMMIT, in autocommit.
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
 * results in the order of `messages`. Same check, cost (two round trips for the whole batch) and
 * errors as {@link publish}.
 *
 * @example
 * ```ts
 * const [a, b] = await sql.begin((tx) => publishMany(outbox, tx, [msgA, msgB]))
 * ```
 */
export const publishMany = publisher.publishMany
