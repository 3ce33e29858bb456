import { OutboxError } from '@outboxkit/core'
import { createPostgresPublisher, type PostgresPublishStatement } from '@outboxkit/core/adapter'
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
    throw mapPrismaError(err, 'postgres') ?? err
  }
  return normaliseRows(rows)
}

/** `publish`/`publishMany` on a Prisma transaction client of the `postgresql` provider. */
export const postgresPublisher = createPostgresPublisher<PrismaTransactionClient>({
  name: ADAPTER,
  checkTransaction: checkPrismaTransaction,
  execute,
})
