import type { OutboxBackend, OutboxDialect } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import type Database from 'better-sqlite3'
import type mysql from 'mysql2/promise'
import type pg from 'pg'
import { quietPool } from './database.js'
import { positional } from './ledger-sql.js'

/**
 * The database of a run: its dialect and where it is (`url`): a PostgreSQL connection string, a
 * MySQL/MariaDB URI (`mysql://root@127.0.0.1:3306/test`), or the path of a SQLite file shared by
 * the processes of the run.
 */
export interface DatabaseTarget {
  readonly dialect: OutboxDialect
  readonly url: string
}

/** The driver under a {@link LedgerDb}, for what only the driver can do (business transactions). */
export type LedgerDriver =
  | { readonly dialect: 'postgres'; readonly pool: pg.Pool }
  | { readonly dialect: 'mysql'; readonly pool: mysql.Pool }
  | { readonly dialect: 'sqlite'; readonly db: Database.Database }

/**
 * Raw SQL on the database of a run, through a connection of its own (never the code under test's):
 * how the ledger is written and the verdict read. Statements use `$1`, `$2`, ... placeholders on
 * every dialect (see `positional`).
 */
export interface LedgerDb {
  readonly dialect: OutboxDialect
  readonly target: DatabaseTarget
  readonly driver: LedgerDriver
  /** The rows of a statement (`[]` for one that returns none). */
  query<T = Record<string, any>>(sql: string, params?: readonly unknown[]): Promise<T[]>
  /** Runs a write; resolves to the number of rows it changed. */
  execute(sql: string, params?: readonly unknown[]): Promise<number>
  /** A backend on this connection (to `migrate`); it leaves the connection open. */
  backend(): OutboxBackend
  close(): Promise<void>
}

/** Options of {@link openLedgerDb}. */
export interface OpenLedgerDbOptions {
  /** Connections of the pool (PostgreSQL, MySQL). Default 8. */
  max?: number
  /** PostgreSQL `application_name` of every connection (so they can be found in `pg_stat_activity`). */
  applicationName?: string
  /** Bound on each statement in ms (PostgreSQL `query_timeout`, MySQL `timeout`). */
  commandTimeoutMs?: number
  /** MySQL: a statement ($1: `pid`) run first on each new connection (see `LedgerSql.registerConnection`). */
  register?: { sql: string; pid: number }
}

/** A {@link LedgerDb} on a pg pool you own (`close()` leaves it open). */
export function pgLedgerDb(pool: pg.Pool, url = ''): LedgerDb {
  return {
    dialect: 'postgres',
    target: { dialect: 'postgres', url },
    driver: { dialect: 'postgres', pool },
    async query<T>(sql: string, params: readonly unknown[] = []) {
      return (await pool.query(sql, params as unknown[])).rows as T[]
    },
    async execute(sql, params = []) {
      return (await pool.query(sql, params as unknown[])).rowCount ?? 0
    },
    backend: () => pgBackend({ pool }),
    async close() {},
  }
}

/**
 * A mysql2/promise pool that never crashes the process on an idle connection's error (server
 * restart, killed connection), reads DATETIME as UTC, and runs `register` first on each new
 * connection. mysql2 is loaded on the first call (PostgreSQL runs never load it).
 */
export async function quietMysqlPool(
  uri: string,
  {
    max = 8,
    commandTimeoutMs,
    register,
  }: Pick<OpenLedgerDbOptions, 'max' | 'commandTimeoutMs' | 'register'> = {},
): Promise<mysql.Pool> {
  const { default: mysql } = await import('mysql2/promise')
  const pool = mysql.createPool({
    uri,
    connectionLimit: max,
    timezone: 'Z',
    charset: 'utf8mb4',
    ...(commandTimeoutMs !== undefined ? { connectTimeout: commandTimeoutMs } : {}),
  })
  pool.on('connection', (c) => {
    const core = c as unknown as {
      on(event: 'error', listener: () => void): void
      query(sql: string, values: unknown[], callback: () => void): void
    }
    core.on('error', () => {})
    // 'connection' is emitted before the connection is handed out: this is its first command.
    if (register) {
      const q = positional(register.sql, [register.pid])
      core.query(q.sql, q.params, () => {})
    }
  })
  return pool
}

/** Opens a better-sqlite3 connection to a shared file: WAL, a 10 s busy timeout, `synchronous = NORMAL`. */
export async function openSqliteFile(filename: string): Promise<Database.Database> {
  const { default: Database } = await import('better-sqlite3')
  const db = new Database(filename, { timeout: 10_000 })
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  return db
}

/**
 * Opens a {@link LedgerDb} of its own on `target`; `close()` ends it. The MySQL and SQLite
 * drivers and adapters are loaded only for their dialect (a relay process starts faster).
 */
export async function openLedgerDb(
  target: DatabaseTarget,
  options: OpenLedgerDbOptions = {},
): Promise<LedgerDb> {
  switch (target.dialect) {
    case 'postgres': {
      const pool = quietPool({
        connectionString: target.url,
        max: options.max ?? 8,
        ...(options.applicationName !== undefined ? { application_name: options.applicationName } : {}),
        ...(options.commandTimeoutMs !== undefined ? { query_timeout: options.commandTimeoutMs } : {}),
      })
      return { ...pgLedgerDb(pool, target.url), close: () => pool.end() }
    }
    case 'mysql': {
      const { mysqlBackend } = await import('@outboxkit/mysql')
      const pool = await quietMysqlPool(target.url, options)
      const timeout = options.commandTimeoutMs
      const run = async (sql: string, params: readonly unknown[]) => {
        const q = positional(sql, params)
        const [result] = await pool.query({
          sql: q.sql,
          values: q.params,
          ...(timeout !== undefined ? { timeout } : {}),
        })
        return result
      }
      return {
        dialect: 'mysql',
        target,
        driver: { dialect: 'mysql', pool },
        async query<T>(sql: string, params: readonly unknown[] = []) {
          const rows = await run(sql, params)
          return (Array.isArray(rows) ? rows : []) as T[]
        },
        async execute(sql, params = []) {
          return ((await run(sql, params)) as { affectedRows?: number }).affectedRows ?? 0
        },
        backend: () => mysqlBackend({ pool }),
        close: () => pool.end(),
      }
    }
    case 'sqlite': {
      const { sqliteBackend } = await import('@outboxkit/sqlite')
      const db = await openSqliteFile(target.url)
      return {
        dialect: 'sqlite',
        target,
        driver: { dialect: 'sqlite', db },
        async query<T>(sql: string, params: readonly unknown[] = []) {
          const q = positional(sql, params)
          const stmt = db.prepare(q.sql)
          if (stmt.reader) return stmt.all(...q.params) as T[]
          stmt.run(...q.params)
          return []
        },
        async execute(sql, params = []) {
          const q = positional(sql, params)
          return db.prepare(q.sql).run(...q.params).changes
        },
        backend: () => sqliteBackend(db),
        async close() {
          if (db.open) db.close()
        },
      }
    }
    default:
      throw new Error(`[outboxkit] [reliability] unknown dialect ${JSON.stringify(target.dialect)}`)
  }
}
