import { OutboxError } from '@outboxkit/core'
import type { OutboxDialect } from './prisma-dialect.js'
import { ADAPTER, notInTransaction } from './transaction-client.js'

interface PrismaErrorShape {
  name?: unknown
  code?: unknown
  message?: unknown
  meta?: {
    driverAdapterError?: {
      cause?: { originalCode?: unknown; code?: unknown; kind?: unknown; state?: unknown }
    }
  }
}

function driverCause(error: unknown) {
  return (error as PrismaErrorShape | undefined)?.meta?.driverAdapterError?.cause
}

/**
 * The database's own code of a Prisma raw-query error (`P2010`) raised through a driver adapter:
 * the SQLSTATE on PostgreSQL (`'25P02'`), the error number as text on MySQL / MariaDB (`'1205'`),
 * the result-code name on SQLite (`'SQLITE_BUSY'`).
 */
export function sqlState(error: unknown): string | undefined {
  const cause = driverCause(error)
  const code = cause?.originalCode ?? cause?.code
  return typeof code === 'string' ? code : typeof code === 'number' ? String(code) : undefined
}

function firstLine(error: PrismaErrorShape): string {
  const text = typeof error.message === 'string' ? error.message : String(error)
  // Prisma prefixes "Invalid `prisma.$queryRawUnsafe()` invocation:" and blank lines; keep the gist.
  const lines = text.split('\n').filter((l) => l.trim() !== '' && !/^Invalid `.*` invocation/.test(l))
  return (lines.at(-1) ?? text).trim()
}

/**
 * MySQL / MariaDB error numbers that mean "timed out": 1205 lock wait timeout
 * (`innodb_lock_wait_timeout`), 3024 MySQL's `max_execution_time`, 1969 MariaDB's
 * `max_statement_time`.
 */
const MYSQL_TIMEOUTS = new Set(['1205', '3024', '1969'])

/**
 * Maps the Prisma errors that mean "this is not an open transaction" or "timed out" to
 * {@link OutboxError}; returns `undefined` for the rest (core turns them into `DATABASE`).
 *
 * - `P2028` (Transaction API error): the interactive transaction is closed (committed, rolled back,
 *   expired past its `timeout`, or no longer known). Prisma throws it before sending the query.
 * - PostgreSQL SQLSTATE `25P02`: the transaction already failed and must be rolled back; nothing
 *   was written.
 * - `TIMEOUT`: PostgreSQL SQLSTATE `57014` (statement_timeout); MySQL / MariaDB errors 1205, 3024,
 *   1969; Prisma's `P1008` or a driver socket timeout (which `@prisma/adapter-better-sqlite3` also
 *   reports for `SQLITE_BUSY`).
 */
export function mapPrismaError(error: unknown, dialect: OutboxDialect = 'postgres'): OutboxError | undefined {
  if (!error || typeof error !== 'object') return undefined
  const e = error as PrismaErrorShape
  if (e.code === 'P2028') {
    return notInTransaction(`a transaction client whose transaction is closed (Prisma: ${firstLine(e)})`, {
      cause: error,
    })
  }
  const state = sqlState(error)
  if (dialect === 'postgres' && state === '25P02') {
    return notInTransaction(
      'a transaction that already failed (an earlier statement in it raised an error) and must be rolled back',
      { cause: error },
    )
  }
  const kind = driverCause(error)?.kind
  const timedOut =
    (dialect === 'postgres' && state === '57014') ||
    (dialect === 'mysql' && state !== undefined && MYSQL_TIMEOUTS.has(state)) ||
    e.code === 'P1008' ||
    kind === 'SocketTimeout'
  if (timedOut) {
    return new OutboxError(
      'TIMEOUT',
      `publish timed out (${firstLine(e)}). The database did not answer in time: check that it is reachable and not locked, or raise the timeout.`,
      { cause: error, source: ADAPTER },
    )
  }
  return undefined
}
