import { OutboxError } from '@outboxkit/core'
import { createSqlitePublisher, type SqliteStatement } from '@outboxkit/core/adapter'
import { mapPrismaError } from './prisma-errors.js'
import {
  ADAPTER,
  checkPrismaTransaction,
  isPrismaTransactionOpen,
  type PrismaTransactionClient,
} from './transaction-client.js'

/** Raw-query rows with SQLite integers (which Prisma hands back as `bigint`) as numbers where safe. */
function normaliseRows(rows: unknown): Record<string, unknown>[] {
  if (!Array.isArray(rows)) {
    throw new OutboxError(
      'DATABASE',
      `publish expected rows from $queryRawUnsafe, got ${rows === null ? 'null' : typeof rows}. Is a client extension rewriting $queryRawUnsafe?`,
      { source: ADAPTER },
    )
  }
  return rows.map((row: Record<string, unknown>) => {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(row)) {
      out[k] = typeof v === 'bigint' && Number.isSafeInteger(Number(v)) ? Number(v) : v
    }
    return out
  })
}

async function all(tx: PrismaTransactionClient, statement: SqliteStatement) {
  let rows: unknown
  try {
    // A native Promise on purpose: core tells synchronous drivers from asynchronous ones by it, and
    // Prisma's own PrismaPromise runs only once awaited.
    rows = await tx.$queryRawUnsafe(statement.sql, ...statement.params)
  } catch (err) {
    throw mapPrismaError(err, 'sqlite') ?? err
  }
  return normaliseRows(rows)
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
