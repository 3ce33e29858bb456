import { createPostgresPublisher, type PostgresPublishStatement } from '@outboxkit/core/adapter'
import { queryRawRows } from './raw-rows.js'
import { ADAPTER, checkPrismaTransaction, type PrismaTransactionClient } from './transaction-client.js'

/**
 * Rows of the publish statement as core reads them: `id` text (or null on the wake-up row),
 * `dedup_key` text or null, `inserted` boolean or null. Driver adapters differ in how they hand
 * back text and booleans, so both are normalised here.
 */
function normaliseRows(rows: Record<string, unknown>[]): Record<string, unknown>[] {
  return rows.map((row) => ({
    id: row.id === null || row.id === undefined ? null : String(row.id),
    dedup_key: row.dedup_key === null || row.dedup_key === undefined ? null : String(row.dedup_key),
    inserted:
      row.inserted === null || row.inserted === undefined
        ? null
        : row.inserted === true || row.inserted === 't',
  }))
}

async function execute(tx: PrismaTransactionClient, statement: PostgresPublishStatement) {
  return normaliseRows(await queryRawRows(tx, statement.text, statement.values, 'postgres'))
}

/** `publish`/`publishMany` on a Prisma transaction client of the `postgresql` provider. */
export const postgresPublisher = createPostgresPublisher<PrismaTransactionClient>({
  name: ADAPTER,
  checkTransaction: checkPrismaTransaction,
  execute,
})
