import { createPostgresPublisher, OutboxError, type PostgresPublishStatement } from '@outboxkit/core'
import { mapPrismaError } from './prisma-errors.js'
import { ADAPTER, checkPrismaTransaction, type PrismaTransactionClient } from './transaction-client.js'

/**
 * Rows of the publish statement as core reads them: `id` text (or null on the wake-up row),
 * `dedup_key` text or null, `inserted` boolean or null. Driver adapters differ in how they hand
 * back text and booleans, so both are normalised here.
 */
function normaliseRows(rows: unknown): Record<string, unknown>[] {
  if (!Array.isArray(rows)) {
    throw new OutboxError(
      'DATABASE',
      `publish expected rows from $queryRawUnsafe, got ${rows === null ? 'null' : typeof rows}. Is a client extension rewriting $queryRawUnsafe?`,
      { source: ADAPTER },
    )
  }
  return rows.map((row: Record<string, unknown>) => ({
    id: row.id === null || row.id === undefined ? null : String(row.id),
    dedup_key: row.dedup_key === null || row.dedup_key === undefined ? null : String(row.dedup_key),
    inserted:
      row.inserted === null || row.inserted === undefined
        ? null
        : row.inserted === true || row.inserted === 't',
  }))
}

async function execute(tx: PrismaTransactionClient, statement: PostgresPublishStatement) {
  let rows: unknown
  try {
    // The transaction's own raw path: one statement, one round trip, positional values as given.
    rows = await tx.$queryRawUnsafe(statement.text, ...statement.values)
  } catch (err) {
    throw mapPrismaError(err) ?? err
  }
  return normaliseRows(rows)
}

const publisher = createPostgresPublisher<PrismaTransactionClient>({
  name: ADAPTER,
  checkTransaction: checkPrismaTransaction,
  execute,
})

/**
 * Publishes one message inside a Prisma interactive transaction: the INSERT (and the relay's
 * NOTIFY wake-up) run as one raw statement, one round trip, on `tx`, so the message commits or
 * rolls back with your writes. Works on a `$extends()` client's transaction and, on Prisma 7.5+,
 * inside a nested `tx.$transaction` (a savepoint).
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
 * after its transaction ended (committed, rolled back, expired) or failed; `INVALID_MESSAGE` for a
 * bad message; `TIMEOUT` when `statement_timeout` fires; `DATABASE` otherwise.
 */
export const publish = publisher.publish

/**
 * Publishes several messages inside a Prisma interactive transaction in one statement (one round
 * trip), all or nothing. Results come back in the order of `messages`. Same checks and errors as
 * {@link publish}.
 *
 * @example
 * ```ts
 * const [a, b] = await prisma.$transaction((tx) => publishMany(outbox, tx, [msgA, msgB]))
 * ```
 */
export const publishMany = publisher.publishMany
