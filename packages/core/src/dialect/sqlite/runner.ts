import { OutboxError, toOutboxError } from '../../outbox/errors.js'
import type { SqliteExecutor } from './backend.js'
import { bindSqlite, type SqliteSql } from './statements.js'

// How the SQLite backend runs its statements: writes holding the write lock, waited for without
// blocking the event loop; reads outside any write transaction.

/** True for SQLite's "database is locked" errors (`SQLITE_BUSY`, `SQLITE_BUSY_SNAPSHOT`, ...). */
export function isSqliteBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY')
}

/** What {@link withWriteLock} returns when it skipped `fn` (the connection is in someone else's transaction). */
export const SKIPPED = Symbol('skipped')
const MAX_LOCK_RETRY_MS = 50

const sleep = (ms: number) =>
  new Promise<void>((resolve) => {
    setTimeout(resolve, ms)
  })

/** The `TIMEOUT` of a write that waited `waited` ms for the write lock. */
function lockTimeout(source: string, what: string, waited: number, inTransaction: boolean): OutboxError {
  return new OutboxError(
    'TIMEOUT',
    `${what} waited ${waited} ms for ${
      inTransaction
        ? 'the transaction open on its connection (a BEGIN kept open across an await) to end'
        : "SQLite's write lock (another connection holds a write transaction)"
    }. Keep write transactions short, or give the backend a longer busy timeout.`,
    { source },
  )
}

/**
 * Runs `fn` holding the write lock, in a transaction of its own: retried every few ms (never
 * blocking the event loop) while another connection holds the lock or the connection is inside
 * someone else's transaction, up to {@link SqliteExecutor.lockTimeoutMs}. With
 * `skipIfInTransaction`, returns {@link SKIPPED} at once instead of waiting for that transaction.
 */
async function withWriteLock<T>(
  executor: SqliteExecutor,
  what: string,
  fn: () => T,
  skipIfInTransaction: boolean,
): Promise<T | typeof SKIPPED> {
  const source = executor.name
  const started = Date.now()
  let timeoutMs: number | undefined
  let pause = 1
  let inTransaction = false
  for (;;) {
    try {
      inTransaction = executor.inTransaction()
      if (inTransaction && skipIfInTransaction) return SKIPPED
      if (!inTransaction) return executor.immediate(fn)
    } catch (err) {
      if (!isSqliteBusy(err)) throw toOutboxError(err, source, what)
    }
    if (timeoutMs === undefined) {
      try {
        timeoutMs = executor.lockTimeoutMs()
      } catch (err) {
        throw toOutboxError(err, source, what)
      }
    }
    const waited = Date.now() - started
    if (waited >= timeoutMs) throw lockTimeout(source, what, waited, inTransaction)
    await sleep(Math.min(pause, timeoutMs - waited))
    pause = Math.min(pause * 2, MAX_LOCK_RETRY_MS)
  }
}

/** How the backend runs its statements on a {@link SqliteExecutor}. */
export interface SqliteRunner {
  /** Runs `fn` holding the write lock (see {@link withWriteLock}). */
  locked<T>(what: string, fn: () => T, skipIfInTransaction: boolean): Promise<T | typeof SKIPPED>
  /** Runs `fn` holding the write lock; the result, never skipped. */
  write<T>(what: string, fn: () => T): Promise<T>
  /** Reads outside a write transaction (WAL readers never wait for the writer). */
  read<T>(what: string, fn: () => T): T
  /** The rows of `statement` with named `args`. */
  all(statement: SqliteSql, args: Record<string, unknown>): Record<string, unknown>[]
  /** How many rows `statement` with named `args` changed. */
  changes(statement: SqliteSql, args: Record<string, unknown>): number
}

/** The {@link SqliteRunner} of `executor`. */
export function sqliteRunner(executor: SqliteExecutor): SqliteRunner {
  const source = executor.name
  const locked = <T>(what: string, fn: () => T, skipIfInTransaction: boolean) =>
    withWriteLock(executor, what, fn, skipIfInTransaction)
  return {
    locked,
    write: async <T>(what: string, fn: () => T): Promise<T> => (await locked(what, fn, false)) as T,
    read<T>(what: string, fn: () => T): T {
      try {
        return fn()
      } catch (err) {
        throw toOutboxError(err, source, what)
      }
    },
    all: (statement, args) => executor.all(statement.sql, bindSqlite(statement, args)),
    changes: (statement, args) => executor.run(statement.sql, bindSqlite(statement, args)).changes,
  }
}
