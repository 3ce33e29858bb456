import { type OutboxDialect, OutboxError } from '@outboxkit/core'
import { mapPrismaError } from './prisma-errors.js'
import { ADAPTER, type PrismaTransactionClient } from './transaction-client.js'

/**
 * What `$queryRawUnsafe` resolved with, as rows.
 *
 * @throws OutboxError `DATABASE` when it is not an array (a client extension rewriting `$queryRawUnsafe`?).
 */
export function rawRows(rows: unknown): Record<string, unknown>[] {
  if (!Array.isArray(rows)) {
    throw new OutboxError(
      'DATABASE',
      `publish expected rows from $queryRawUnsafe, got ${rows === null ? 'null' : typeof rows}. Is a client extension rewriting $queryRawUnsafe?`,
      { source: ADAPTER },
    )
  }
  return rows as Record<string, unknown>[]
}

/**
 * Runs one statement through the transaction's own raw path (`$queryRawUnsafe`: one statement,
 * one round trip, positional values as given) and returns its rows (see {@link rawRows}); a
 * driver error is mapped for `dialect` (see `mapPrismaError`) or rethrown.
 */
export async function queryRawRows(
  tx: PrismaTransactionClient,
  sql: string,
  values: readonly unknown[],
  dialect: OutboxDialect,
): Promise<Record<string, unknown>[]> {
  let rows: unknown
  try {
    // A native Promise on purpose: core's SQLite publisher tells synchronous drivers from
    // asynchronous ones by it, and Prisma's own PrismaPromise runs only once awaited.
    rows = await tx.$queryRawUnsafe(sql, ...values)
  } catch (err) {
    throw mapPrismaError(err, dialect) ?? err
  }
  return rawRows(rows)
}
