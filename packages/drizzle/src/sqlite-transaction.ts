import type { SqliteRows, SqliteStatement } from '@outboxkit/core/adapter'
import { is } from 'drizzle-orm'
import { type SQLiteSession, SQLiteTransaction } from 'drizzle-orm/sqlite-core'
import { hasEntityKind } from './entity-kind.js'
import { notATransaction, unsupportedDriver } from './handle.js'
import { notInTransaction } from './refusal.js'

/**
 * A Drizzle SQLite transaction on better-sqlite3: the `tx` of `db.transaction((tx) => ...)` of
 * `drizzle-orm/better-sqlite3`, or of a nested `tx.transaction(...)` (a savepoint). Synchronous,
 * as better-sqlite3 is.
 */
export type DrizzleSqliteTransaction = SQLiteTransaction<'sync', any, any, any>

/** The slice of a better-sqlite3 `Database` the check reads. */
interface BetterSqliteDatabase {
  readonly inTransaction?: unknown
  readonly open?: unknown
}

type AnySqliteSession = SQLiteSession<'sync', any, any, any>

/** `tx.session`: `@internal` in Drizzle's types, the session the transaction runs its queries on. */
function sessionOf(tx: DrizzleSqliteTransaction): AnySqliteSession {
  return (tx as unknown as { session: AnySqliteSession }).session
}

/** `session.client`: private in Drizzle, the better-sqlite3 `Database` itself. */
function databaseOf(session: AnySqliteSession): BetterSqliteDatabase | undefined {
  return (session as unknown as { client?: BetterSqliteDatabase }).client
}

function whyNotOpen(db: BetterSqliteDatabase | undefined): string | undefined {
  if (db?.open === false) return 'a Drizzle better-sqlite3 transaction whose database is closed'
  // better-sqlite3's own signal: true from BEGIN until COMMIT or ROLLBACK (sqlite3_get_autocommit).
  if (db?.inTransaction !== true) {
    return 'a Drizzle transaction that already committed or rolled back (its better-sqlite3 database is no longer inside a transaction)'
  }
  return undefined
}

/**
 * Returns `handle` when it is an open Drizzle transaction on better-sqlite3, judged by Drizzle's
 * brand check (`is(handle, SQLiteTransaction)`), the session's driver (`BetterSQLiteSession`) and
 * the database's `inTransaction`; otherwise throws `OutboxError('NOT_IN_TRANSACTION')`.
 * Synchronous, sends nothing.
 */
export function checkSqliteTransaction(handle: unknown): DrizzleSqliteTransaction {
  if (!is(handle, SQLiteTransaction)) throw notATransaction(handle)
  const tx = handle as DrizzleSqliteTransaction
  const session = sessionOf(tx)
  if (!hasEntityKind(session, 'BetterSQLiteSession')) throw unsupportedDriver(handle, 'sync')
  const problem = whyNotOpen(databaseOf(session))
  if (problem) throw notInTransaction(problem, 'sync')
  return tx
}

/**
 * Runs the statement synchronously through Drizzle's own query path on the transaction's session
 * (better-sqlite3's `Statement.all`, with Drizzle's logger) and returns its rows. The connection is
 * the transaction's: better-sqlite3 has one per `Database`, and JavaScript runs nothing else
 * between the check and this call.
 */
export function allSqlite(tx: DrizzleSqliteTransaction, statement: SqliteStatement): SqliteRows {
  const session = sessionOf(tx)
  const problem = whyNotOpen(databaseOf(session))
  if (problem) throw notInTransaction(problem, 'sync')
  const prepared = session.prepareQuery(
    { sql: statement.sql, params: [...statement.params] },
    undefined,
    'all',
    false,
  )
  return prepared.all() as SqliteRows
}

/** Whether the transaction of `tx` is still open (better-sqlite3's `inTransaction`), for the in-process wake. */
export function inSqliteTransaction(tx: DrizzleSqliteTransaction): boolean {
  return whyNotOpen(databaseOf(sessionOf(tx))) === undefined
}
