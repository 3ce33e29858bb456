import { OutboxError } from '@outboxkit/core'
import { ADAPTER, notInTransaction } from './transaction-client.js'

interface PrismaErrorShape {
  name?: unknown
  code?: unknown
  message?: unknown
  meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; code?: unknown; kind?: unknown } } }
}

/** The PostgreSQL SQLSTATE of a Prisma raw-query error (`P2010`) raised through a driver adapter. */
export function sqlState(error: unknown): string | undefined {
  const cause = (error as PrismaErrorShape | undefined)?.meta?.driverAdapterError?.cause
  const code = cause?.originalCode ?? cause?.code
  return typeof code === 'string' ? code : undefined
}

function firstLine(error: PrismaErrorShape): string {
  const text = typeof error.message === 'string' ? error.message : String(error)
  // Prisma prefixes "Invalid `prisma.$queryRawUnsafe()` invocation:" and blank lines; keep the gist.
  const lines = text.split('\n').filter((l) => l.trim() !== '' && !/^Invalid `.*` invocation/.test(l))
  return (lines.at(-1) ?? text).trim()
}

/**
 * Maps the Prisma errors that mean "this is not an open transaction" or "timed out" to
 * {@link OutboxError}; returns `undefined` for the rest (core turns them into `DATABASE`).
 *
 * - `P2028` (Transaction API error): the interactive transaction is closed (committed, rolled back,
 *   expired past its `timeout`, or no longer known). Prisma throws it before sending the query.
 * - SQLSTATE `25P02`: the transaction already failed and must be rolled back; nothing was written.
 * - SQLSTATE `57014` (statement_timeout) and Prisma's `P1008` / a socket timeout: `TIMEOUT`.
 */
export function mapPrismaError(error: unknown): OutboxError | undefined {
  if (!error || typeof error !== 'object') return undefined
  const e = error as PrismaErrorShape
  if (e.code === 'P2028') {
    return notInTransaction(`a transaction client whose transaction is closed (Prisma: ${firstLine(e)})`, {
      cause: error,
    })
  }
  const state = sqlState(error)
  if (state === '25P02') {
    return notInTransaction(
      'a transaction that already failed (an earlier statement in it raised an error) and must be rolled back',
      { cause: error },
    )
  }
  const kind = e.meta?.driverAdapterError?.cause?.kind
  if (state === '57014' || e.code === 'P1008' || kind === 'SocketTimeout') {
    return new OutboxError(
      'TIMEOUT',
      `publish timed out (${firstLine(e)}). The database did not answer in time: check that it is reachable and not locked, or raise the timeout.`,
      { cause: error, source: ADAPTER },
    )
  }
  return undefined
}
