import { createPostgresPublisher, type PublishFn, type PublishManyFn } from '@outboxkit/core'
import { type PostgresTransaction, postgresTransaction, runPostgresStatement } from './postgres-statement.js'
import { openTransaction, type TypeormTransaction } from './transaction-handle.js'

const publisher = createPostgresPublisher<PostgresTransaction>({
  name: 'typeorm',
  checkTransaction: (handle) => postgresTransaction(openTransaction(handle)),
  execute: runPostgresStatement,
})

/**
 * Publishes one message inside a TypeORM transaction: the INSERT (and the relay's NOTIFY
 * wake-up) run as one raw statement, one round trip, on the transaction's own connection, so the
 * message commits or rolls back with your transaction. Nested transactions (savepoints) work:
 * rolling one back removes the messages published in it.
 *
 * `tx` is the `EntityManager` of `dataSource.transaction(async (manager) => ...)` (or of a nested
 * `manager.transaction(...)`), or a `QueryRunner` after `await queryRunner.startTransaction()`.
 * The check costs no round trip: TypeORM's own flags (`queryRunner.isTransactionActive` and
 * `!queryRunner.isReleased`), then pg's transaction status (pg >= 8.21), read again at the moment
 * the statement is sent. Only TypeORM's `postgres` driver is supported for now.
 *
 * @example
 * ```ts
 * await dataSource.transaction(async (manager) => {
 *   await manager.save(Order, order)
 *   await publish(outbox, manager, { topic: 'order.created', payload: { orderId: order.id } })
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for a DataSource, `dataSource.manager`, a QueryRunner
 * without `startTransaction()`, and a transaction that already committed, rolled back, failed or
 * was released (nothing is written); `INVALID_CONFIG` for a driver other than `postgres`;
 * `INVALID_MESSAGE` for a bad message; `TIMEOUT` when the server's `statement_timeout` fires;
 * `DATABASE` otherwise.
 */
export const publish = publisher.publish as unknown as PublishFn<TypeormTransaction>

/**
 * Publishes several messages inside a TypeORM transaction in one statement (one round trip), all
 * or nothing, results in the order of `messages`. Same handles, checks and errors as
 * {@link publish}.
 *
 * @example
 * ```ts
 * const [a, b] = await publishMany(outbox, manager, [msgA, msgB])
 * ```
 */
export const publishMany = publisher.publishMany as unknown as PublishManyFn<TypeormTransaction>
