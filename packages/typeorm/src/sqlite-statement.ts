import type { SqliteRows, SqliteStatement } from '@outboxkit/core/adapter'
import { openTransaction, refuse, type TypeormOpenTransaction } from './transaction-handle.js'

/** The slice of a better-sqlite3 `Database` used here. */
interface BetterSqliteDatabase {
  readonly open: boolean
  /** better-sqlite3's own signal (SQLite's autocommit flag): true from BEGIN to COMMIT / ROLLBACK. */
  readonly inTransaction: boolean
  prepare(sql: string): {
    readonly reader: boolean
    all(params: unknown[]): Record<string, unknown>[]
    run(params: unknown[]): unknown
  }
}

/** An open TypeORM transaction on the `better-sqlite3` driver, with the driver's one connection. */
export interface SqliteTransaction extends TypeormOpenTransaction {
  readonly db: BetterSqliteDatabase
}

function databaseOf(tx: TypeormOpenTransaction): BetterSqliteDatabase | undefined {
  // TypeORM's SQLite drivers keep one connection for the whole DataSource (`driver.databaseConnection`,
  // what `queryRunner.connect()` resolves to): every runner's transaction is on it.
  const db = (tx.dataSource.driver as { databaseConnection?: unknown } | undefined)?.databaseConnection
  const d = db as Partial<BetterSqliteDatabase> | null | undefined
  return d && typeof d.prepare === 'function' && typeof d.inTransaction === 'boolean'
    ? (d as BetterSqliteDatabase)
    : undefined
}

/** Why the statement must not run, from TypeORM's flags and better-sqlite3's, or `undefined`. */
function refusal(tx: TypeormOpenTransaction, db: BetterSqliteDatabase | undefined) {
  const { runner, what, runnerSubject } = tx
  if (runner.isReleased) return refuse(`${runnerSubject} was released (its transaction ended)`)
  if (!runner.isTransactionActive) {
    return refuse(`${what} whose transaction committed or rolled back`)
  }
  if (!db?.open) return refuse(`${what} whose DataSource's SQLite connection is closed`)
  if (!db.inTransaction) {
    return refuse(
      `${what} whose connection is not inside a transaction (SQLite reports autocommit: a raw COMMIT or ROLLBACK through query() ended it, or an error made SQLite roll it back)`,
      'Roll back and retry the unit of work with dataSource.transaction() or queryRunner.startTransaction(). Nothing was written.',
    )
  }
  return undefined
}

/**
 * Recognises `handle` as an open TypeORM transaction on the `better-sqlite3` driver: TypeORM's
 * flags (`isTransactionActive && !isReleased`), then better-sqlite3's `db.inTransaction` on the
 * DataSource's connection. Synchronous, sends nothing.
 *
 * @throws OutboxError `NOT_IN_TRANSACTION` when either says the transaction is not open.
 */
export function sqliteTransaction(handle: unknown): SqliteTransaction {
  const tx = openTransaction(handle)
  const db = databaseOf(tx)
  const refused = refusal(tx, db)
  if (refused) throw refused
  return { ...tx, db: db! }
}

/**
 * Runs one statement synchronously on the DataSource's better-sqlite3 connection, after checking
 * the transaction again (free: nothing can run in between, better-sqlite3 is synchronous). So the
 * row is written before `publish` returns. TypeORM's logger logs the statement (and its error) as
 * `queryRunner.query()` would; TypeORM subscribers' `beforeQuery` / `afterQuery` do not see it.
 */
export function runSqliteStatement(tx: SqliteTransaction, statement: SqliteStatement): SqliteRows {
  const refused = refusal(tx, tx.db)
  if (refused) throw refused
  const log = tx.dataSource.logger
  try {
    log?.logQuery(statement.sql, statement.params, tx.runner)
  } catch {}
  try {
    const prepared = tx.db.prepare(statement.sql)
    if (prepared.reader) return prepared.all(statement.params)
    prepared.run(statement.params)
    return []
  } catch (err) {
    try {
      log?.logQueryError(err, statement.sql, statement.params, tx.runner)
    } catch {}
    throw err
  }
}
