import type { ProcessOnceFn, PublishFn, PublishManyFn } from '@outboxkit/core'
import { routePublisher } from '@outboxkit/core/adapter'
import { mysqlPublisher } from './mysql-publisher.js'
import { postgresPublisher } from './postgres-publisher.js'
import { prismaDialect } from './prisma-dialect.js'
import { sqlitePublisher } from './sqlite-publisher.js'
import type { PrismaTransactionClient } from './transaction-client.js'

/**
 * The publisher for the dialect of `tx` (its Prisma client's datasource provider). A handle that
 * is not a Prisma client at all goes to the PostgreSQL one, whose transaction check refuses it
 * with the usual message.
 */
function publisherFor(tx: unknown) {
  switch (prismaDialect(tx)) {
    case 'mysql':
      return mysqlPublisher
    case 'sqlite':
      return sqlitePublisher
    default:
      return postgresPublisher
  }
}

const routed = routePublisher<PrismaTransactionClient>(publisherFor)

/**
 * Publishes one message inside a Prisma interactive transaction, so the message commits or rolls
 * back with your writes. The SQL follows the client's datasource provider: `postgresql` (one
 * statement with the relay's NOTIFY wake-up, one round trip), `mysql` (MySQL 8+ / MariaDB 10.6+:
 * one INSERT, plus one SELECT when the message has a `dedupKey`) or `sqlite` (one INSERT ...
 * RETURNING). Works on a `$extends()` client's transaction and, on Prisma 7.5+, inside a nested
 * `tx.$transaction` (a savepoint).
 *
 * The transaction check costs no round trip: it reads Prisma's own transaction marker on `tx`.
 *
 * @example
 * ```ts
 * await prisma.$transaction(async (tx) => {
 *   const order = await tx.order.create({ data: { customer: 'ada', totalCents: 4200 } })
 *   await publish(outbox, tx, { topic: 'order.created', payload: { orderId: order.id }, key: order.id })
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for a root or `$extends()` PrismaClient, or a `tx` used
 * after its transaction ended (committed, rolled back, expired, or, on MariaDB, ended by the
 * server after a deadlock) or failed; `INVALID_MESSAGE` for a bad message; `INVALID_CONFIG` for a
 * client of another provider (`cockroachdb`, `sqlserver`, `mongodb`); `TIMEOUT` when a statement
 * or lock timeout fires; `DATABASE` otherwise.
 */
export const publish: PublishFn<PrismaTransactionClient> = routed.publish

/**
 * Publishes several messages inside a Prisma interactive transaction, all or nothing (one
 * statement on PostgreSQL and SQLite; on MySQL one INSERT per 8,000 messages, plus one SELECT
 * when some message has a `dedupKey`). Results come back in the order of `messages`. Same checks
 * and errors as {@link publish}.
 *
 * @example
 * ```ts
 * const [a, b] = await prisma.$transaction((tx) => publishMany(outbox, tx, [msgA, msgB]))
 * ```
 */
export const publishMany: PublishManyFn<PrismaTransactionClient> = routed.publishMany

/**
 * Runs `fn` once per message id for the inbox's consumer, inside a Prisma interactive transaction client:
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
 * await prisma.$transaction(async (tx) => {
 *   await processOnce(inbox, tx, message, () => tx.invoice.create({ data: { orderId } }))
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the same handles {@link publish} refuses (nothing is
 * written); `INVALID_MESSAGE` for a message without a string `id` (1 to 255 characters);
 * `INVALID_CONFIG` for something that is not an inbox of `defineInbox`, or no callback; `TIMEOUT`
 * and `DATABASE` as for publish. Whatever `fn` throws, unchanged.
 */
export const processOnce: ProcessOnceFn<PrismaTransactionClient> = routed.processOnce
