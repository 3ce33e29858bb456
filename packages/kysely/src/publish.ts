import type { ProcessOnceFn, PublishFn, PublishManyFn } from '@outboxkit/core'
import { type Publisher, routePublisher } from '@outboxkit/core/adapter'
import { kyselyDialect, type OutboxDialect } from './dialect.js'
import { mysqlPublisher } from './mysql.js'
import { postgresPublisher } from './postgres.js'
import { sqlitePublisher } from './sqlite.js'
import { claimsTransaction, type KyselyTransaction } from './transaction.js'

const publishers: Readonly<Record<OutboxDialect, Publisher<any>>> = {
  postgres: postgresPublisher,
  mysql: mysqlPublisher,
  sqlite: sqlitePublisher,
}

/**
 * The publisher for the dialect of `tx`. A handle that does not even claim to be a Kysely
 * transaction has no dialect: it goes to the PostgreSQL publisher, whose transaction check
 * refuses it the same way every dialect would.
 */
function publisherFor(tx: unknown) {
  return claimsTransaction(tx) ? publishers[kyselyDialect(tx)] : postgresPublisher
}

const routed = routePublisher<KyselyTransaction>(publisherFor)

/**
 * Publishes one message inside a Kysely transaction, so it commits or rolls back with your
 * transaction. The dialect comes from the transaction itself (its executor's adapter:
 * `PostgresAdapter`, `MysqlAdapter` or `SqliteAdapter`, or a dialect built on one):
 * - PostgreSQL: the INSERT and the relay's NOTIFY wake-up as one raw statement, one round trip;
 * - MySQL 8+ / MariaDB 10.6+: one INSERT (plus a SELECT when a message has a `dedupKey`); on
 *   MariaDB the INSERT writes only while the connection is inside a transaction;
 * - SQLite: one `INSERT ... RETURNING` (plus a SELECT when a `dedupKey` already existed).
 *
 * The transaction check costs no round trip: it reads Kysely's `isTransaction` (and
 * `isCommitted` / `isRolledBack` on a `ControlledTransaction`); a callback `Transaction` used after
 * its transaction ended is stopped by Kysely itself before any SQL is sent.
 *
 * @example
 * ```ts
 * await db.transaction().execute(async (trx) => {
 *   await trx.insertInto('orders').values(order).execute()
 *   await publish(outbox, trx, { topic: 'order.created', payload: { orderId: order.id } })
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the root db, a `db.connection()` handle, a
 * transaction that already committed, rolled back or failed; `INVALID_CONFIG` for a dialect other
 * than PostgreSQL, MySQL and SQLite; `INVALID_MESSAGE` for a bad message; `TIMEOUT` when the
 * server's statement timeout (or MySQL's lock wait timeout) fires; `DATABASE` otherwise.
 */
export const publish: PublishFn<KyselyTransaction> = routed.publish

/**
 * Publishes several messages inside a Kysely transaction, all or nothing, results in the order
 * of `messages`: one statement on PostgreSQL, one INSERT (plus a SELECT for `dedupKey`s) on MySQL
 * and SQLite. Same dialects, checks and errors as {@link publish}.
 *
 * @example
 * ```ts
 * const [a, b] = await publishMany(outbox, trx, [msgA, msgB])
 * ```
 */
export const publishMany: PublishManyFn<KyselyTransaction> = routed.publishMany

/**
 * Runs `fn` once per message id for the inbox's consumer, inside a Kysely transaction:
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
 * await db.transaction().execute(async (trx) => {
 *   const { processed } = await processOnce(inbox, trx, message, async () => {
 *     await trx.insertInto('invoices').values({ orderId: message.payload.orderId }).execute()
 *   })
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the same handles {@link publish} refuses (nothing is
 * written); `INVALID_MESSAGE` for a message without a string `id` (1 to 255 characters);
 * `INVALID_CONFIG` for something that is not an inbox of `defineInbox`, or no callback; `TIMEOUT`
 * and `DATABASE` as for publish. Whatever `fn` throws, unchanged.
 */
export const processOnce: ProcessOnceFn<KyselyTransaction> = routed.processOnce
