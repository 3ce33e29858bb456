import { createSqlitePublisher, type SqliteStatement } from '@outboxkit/core/adapter'
import { queryRawRows } from './raw-rows.js'
import {
  ADAPTER,
  checkPrismaTransaction,
  isPrismaTransactionOpen,
  type PrismaTransactionClient,
} from './transaction-client.js'

/** Raw-query rows with SQLite integers (which Prisma hands back as `bigint`) as numbers where safe. */
function normaliseRows(rows: Record<string, unknown>[]): Record<string, unknown>[] {
  return rows.map((row) => {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(row)) {
      out[k] = typeof v === 'bigint' && Number.isSafeInteger(Number(v)) ? Number(v) : v
    }
    return out
  })
}

async function all(tx: PrismaTransactionClient, statement: SqliteStatement) {
  return normaliseRows(await queryRawRows(tx, statement.sql, statement.params, 'sqlite'))
}

/**
 * `publish`/`publishMany` on a Prisma transaction client of the `sqlite` provider (through
 * `@prisma/adapter-better-sqlite3`). Prisma's raw queries are asynchronous, so the INSERT runs
 * when `publish` is awaited, like every other Prisma query. Relays of this process listening on
 * the outbox are woken once Prisma has committed or rolled back the transaction (its scope marker).
 */
export const sqlitePublisher = createSqlitePublisher<PrismaTransactionClient>({
  name: ADAPTER,
  checkTransaction: checkPrismaTransaction,
  all,
  inTransaction: isPrismaTransactionOpen,
})
