import type { ProcessOnceFn, PublishFn, PublishManyFn } from '@outboxkit/core'
import {
  createMysqlPublisher,
  createPostgresPublisher,
  createSqlitePublisher,
  type PostgresPublisherSpec,
  type PostgresPublishStatement,
  type Publisher,
  routePublisher,
} from '@outboxkit/core/adapter'
import { driverError } from './driver-error.js'
import { transactionDialect } from './handle.js'
import {
  checkMysqlTransaction,
  type DrizzleMysqlTransaction,
  executeMysql,
  type MysqlTransactionCheck,
  mysqlConnectionOf,
  mysqlGuard,
} from './mysql-transaction.js'
import { ADAPTER, notInTransaction } from './refusal.js'
import {
  allSqlite,
  checkSqliteTransaction,
  type DrizzleSqliteTransaction,
  inSqliteTransaction,
} from './sqlite-transaction.js'
import {
  checkTransaction,
  type DrizzleTransaction,
  driverOf,
  driverOfHandle,
  sessionOf,
} from './transaction.js'

/**
 * What `publish` takes: a Drizzle transaction of any supported dialect (the `tx` of
 * `db.transaction(...)`, or of a nested `tx.transaction(...)`). The dialect is chosen from it.
 */
export type AnyDrizzleTransaction = DrizzleTransaction | DrizzleMysqlTransaction | DrizzleSqliteTransaction

const spec: PostgresPublisherSpec<DrizzleTransaction> = {
  name: ADAPTER,
  checkTransaction,
  async execute(tx: DrizzleTransaction, statement: PostgresPublishStatement) {
    const session = sessionOf(tx)
    try {
      return await driverOf(session).execute(session, statement)
    } catch (err) {
      throw driverError(err)
    }
  },
}

/** For drivers that can report their transaction state (node-postgres, PGlite): the plain statement. */
const plain = createPostgresPublisher<DrizzleTransaction>(spec)
/** For drivers that cannot (postgres.js, drivers the adapter does not know): the guarded statement. */
const guarded = createPostgresPublisher<DrizzleTransaction>({
  ...spec,
  guarded: {
    refuse: () =>
      notInTransaction(
        'a Drizzle transaction that already committed or rolled back (postgres.js would run the statement in autocommit)',
      ),
  },
})

/** MySQL and MariaDB on mysql2, with the given transaction check (`'auto'` in the exported functions). */
function mysqlPublisher(check: MysqlTransactionCheck) {
  return createMysqlPublisher<DrizzleMysqlTransaction>({
    name: ADAPTER,
    checkTransaction: checkMysqlTransaction,
    guard: (tx) => mysqlGuard(tx, check),
    connectionOf: mysqlConnectionOf,
    execute: executeMysql,
  })
}

/** SQLite on better-sqlite3: synchronous, so the INSERT has run when `publish` returns. */
const sqlite = createSqlitePublisher<DrizzleSqliteTransaction>({
  name: ADAPTER,
  checkTransaction: checkSqliteTransaction,
  all: allSqlite,
  isSynchronous: () => true,
  inTransaction: inSqliteTransaction,
})

/**
 * Builds `publish`, `publishMany` and `processOnce` for every dialect. `mysqlCheck` picks the MySQL transaction
 * check (`'auto'` in the exported functions; the others exist so both paths can be tested on one
 * server).
 */
export function createDrizzlePublisher(mysqlCheck: MysqlTransactionCheck = 'auto'): {
  publish: PublishFn<AnyDrizzleTransaction>
  publishMany: PublishManyFn<AnyDrizzleTransaction>
  processOnce: ProcessOnceFn<AnyDrizzleTransaction>
} {
  const mysql = mysqlPublisher(mysqlCheck)
  // Chosen synchronously, so a SQLite publish writes before it returns. Anything that is no
  // transaction of a known dialect goes to the PostgreSQL publisher, whose check refuses it.
  const publisherFor = (tx: unknown) => {
    switch (transactionDialect(tx)) {
      case 'mysql':
        return mysql as unknown as typeof plain
      case 'sqlite':
        return sqlite as unknown as typeof plain
      default:
        return driverOfHandle(tx)?.guarded ? guarded : plain
    }
  }
  return routePublisher<AnyDrizzleTransaction>(
    publisherFor as unknown as (tx: AnyDrizzleTransaction) => Publisher<AnyDrizzleTransaction>,
  )
}

const publisher = createDrizzlePublisher()

/**
 * Publishes one message inside a Drizzle transaction, so it commits or rolls back with it. Works
 * in nested transactions (savepoints) too. The dialect is chosen from the transaction by Drizzle's
 * own brand checks: `is(tx, PgTransaction)`, `is(tx, MySqlTransaction)`, `is(tx, SQLiteTransaction)`.
 *
 * Drivers: `drizzle-orm/node-postgres`, `drizzle-orm/postgres-js`, `drizzle-orm/pglite`,
 * `drizzle-orm/mysql2` (MySQL 8+, MariaDB 10.6+) and `drizzle-orm/better-sqlite3` are tested.
 * PostgreSQL: the INSERT (and the relay's NOTIFY wake-up) is one statement, one round trip;
 * node-postgres reads the connection's transaction status, PGlite its transaction's `closed`
 * flag, postgres.js pipelines a transaction-local marker with a guarded statement. MySQL: the
 * server checks the transaction with the write (a guard on MariaDB, a `DO 0` probe on MySQL).
 * SQLite: better-sqlite3's `inTransaction`; the INSERT runs synchronously, before `publish`
 * returns.
 *
 * @example
 * ```ts
 * // PostgreSQL, MySQL: async transactions
 * await db.transaction(async (tx) => {
 *   await tx.insert(orders).values(order)
 *   await publish(outbox, tx, { topic: 'order.created', payload: { orderId: order.id }, key: order.id })
 * })
 * // SQLite (better-sqlite3): a synchronous transaction; the row is written when publish returns
 * db.transaction((tx) => {
 *   tx.insert(orders).values(order).run()
 *   void publish(outbox, tx, { topic: 'order.created', payload: { orderId: order.id } })
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the root `db` or anything that is not a Drizzle
 * transaction of a supported driver, or a transaction that already ended or failed (nothing is
 * written); `INVALID_MESSAGE` for a bad message; `TIMEOUT` when the server's statement timeout or
 * the driver's query timeout fires; `DATABASE` otherwise. On SQLite, errors raised once the
 * transaction is known to be open (an invalid message, a failed INSERT) are thrown synchronously,
 * so the synchronous transaction rolls back; `NOT_IN_TRANSACTION` rejects the returned Promise.
 */
export const publish: PublishFn<AnyDrizzleTransaction> = publisher.publish

/**
 * Publishes several messages inside a Drizzle transaction in one statement, all or nothing,
 * results in the order of `messages`. Same checks and errors as {@link publish}.
 *
 * @example
 * ```ts
 * const [a, b] = await publishMany(outbox, tx, [msgA, msgB])
 * ```
 */
export const publishMany: PublishManyFn<AnyDrizzleTransaction> = publisher.publishMany

/**
 * Runs `fn` once per message id for the inbox's consumer, inside a Drizzle transaction:
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
 * await db.transaction(async (tx) => {
 *   await processOnce(inbox, tx, message, () => tx.insert(invoices).values({ orderId }))
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the same handles {@link publish} refuses (nothing is
 * written); `INVALID_MESSAGE` for a message without a string `id` (1 to 255 characters);
 * `INVALID_CONFIG` for something that is not an inbox of `defineInbox`, or no callback; `TIMEOUT`
 * and `DATABASE` as for publish. Whatever `fn` throws, unchanged.
 */
export const processOnce: ProcessOnceFn<AnyDrizzleTransaction> = publisher.processOnce
