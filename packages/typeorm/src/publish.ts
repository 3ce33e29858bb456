import type { ProcessOnceFn, PublishFn, PublishManyFn } from '@outboxkit/core'
import {
  createMysqlPublisher,
  createPostgresPublisher,
  createSqlitePublisher,
  MARIADB_TRANSACTION_GUARD,
  type Publisher,
  routePublisher,
} from '@outboxkit/core/adapter'
import type { OutboxDialect } from './dialect.js'
import { type MysqlTransaction, mysqlTransaction, runMysqlStatement } from './mysql-statement.js'
import { type PostgresTransaction, postgresTransaction, runPostgresStatement } from './postgres-statement.js'
import { runSqliteStatement, type SqliteTransaction, sqliteTransaction } from './sqlite-statement.js'
import { handleDialect, openTransaction, type TypeormTransaction } from './transaction-handle.js'

const ADAPTER = 'typeorm'

const publishers: Readonly<Record<OutboxDialect, Publisher<any>>> = {
  postgres: createPostgresPublisher<PostgresTransaction>({
    name: ADAPTER,
    checkTransaction: (handle) => postgresTransaction(openTransaction(handle)),
    execute: runPostgresStatement,
  }),
  mysql: createMysqlPublisher<MysqlTransaction>({
    name: ADAPTER,
    checkTransaction: (handle) => mysqlTransaction(openTransaction(handle)),
    execute: runMysqlStatement,
    guard: (tx) => (tx.mariadb ? MARIADB_TRANSACTION_GUARD : undefined),
    connectionOf: (tx) => tx.conn ?? tx.runner,
  }),
  sqlite: createSqlitePublisher<SqliteTransaction>({
    name: ADAPTER,
    checkTransaction: sqliteTransaction,
    all: runSqliteStatement,
    isSynchronous: () => true,
    inTransaction: (tx) => tx.db.open && tx.db.inTransaction,
  }),
}

/**
 * The publisher for the driver of `tx`'s DataSource. A handle that is not a TypeORM
 * EntityManager or QueryRunner has no driver: the PostgreSQL publisher refuses it, as every
 * dialect would.
 */
function publisherFor(tx: unknown) {
  return publishers[handleDialect(tx) ?? 'postgres']
}

const routed = routePublisher<TypeormTransaction>(publisherFor)

/**
 * Publishes one message inside a TypeORM transaction, on the transaction's own connection, so
 * the message commits or rolls back with your transaction. Nested transactions (savepoints)
 * work: rolling one back removes the messages published in it.
 *
 * `tx` is the `EntityManager` of `dataSource.transaction(async (manager) => ...)` (or of a nested
 * `manager.transaction(...)`), or a `QueryRunner` after `await queryRunner.startTransaction()`.
 * The dialect comes from the DataSource's `type`:
 * - `postgres`: the INSERT and the relay's NOTIFY wake-up in one statement, one round trip;
 *   checked by TypeORM's flags (`queryRunner.isTransactionActive && !queryRunner.isReleased`)
 *   and pg's transaction status (pg >= 8.21), again at the moment the statement is sent;
 * - `mysql` / `mariadb` (mysql2): one INSERT (plus a SELECT when a message has a `dedupKey`),
 *   checked by TypeORM's flags and by the server at send time (a guard in the INSERT on MariaDB,
 *   a `DO 0` probe right before it on MySQL);
 * - `better-sqlite3`: one `INSERT ... RETURNING`, written synchronously before `publish`
 *   returns, checked by TypeORM's flags and better-sqlite3's `inTransaction`.
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
 * was released (nothing is written); `INVALID_CONFIG` for a driver other than `postgres`,
 * `mysql`, `mariadb` and `better-sqlite3`; `INVALID_MESSAGE` for a bad message; `TIMEOUT` when the
 * server's statement timeout (or MySQL's lock wait timeout) fires; `DATABASE` otherwise.
 */
export const publish: PublishFn<TypeormTransaction> = routed.publish

/**
 * Publishes several messages inside a TypeORM transaction, all or nothing, results in the order
 * of `messages`: one statement on PostgreSQL, one INSERT (plus a SELECT for `dedupKey`s) on MySQL
 * and SQLite. Same handles, checks and errors as {@link publish}.
 *
 * @example
 * ```ts
 * const [a, b] = await publishMany(outbox, manager, [msgA, msgB])
 * ```
 */
export const publishMany: PublishManyFn<TypeormTransaction> = routed.publishMany

/**
 * Runs `fn` once per message id for the inbox's consumer, inside a TypeORM transaction's `EntityManager` (or a `QueryRunner` after `startTransaction()`):
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
 * await dataSource.transaction(async (manager) => {
 *   await processOnce(inbox, manager, message, () => manager.insert(Invoice, { orderId }))
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the same handles {@link publish} refuses (nothing is
 * written); `INVALID_MESSAGE` for a message without a string `id` (1 to 255 characters);
 * `INVALID_CONFIG` for something that is not an inbox of `defineInbox`, or no callback; `TIMEOUT`
 * and `DATABASE` as for publish. Whatever `fn` throws, unchanged.
 */
export const processOnce: ProcessOnceFn<TypeormTransaction> = routed.processOnce
