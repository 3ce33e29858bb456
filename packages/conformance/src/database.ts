import Database from 'better-sqlite3'
import mysql from 'mysql2/promise'
import pg from 'pg'

import { LOCAL_MYSQL_URL, LOCAL_POSTGRES_URL } from './test-databases.js'

/**
 * The PostgreSQL server the tests use: `DATABASE_URL`, which the repository's vitest
 * `globalSetup` sets to the server it chose (the variable as given, else the local server when it
 * answers, else a container: see `test-databases.ts`); without that setup, `DATABASE_URL` when set,
 * else the local server at 127.0.0.1:5432 (database `test`, trust auth).
 */
export function testDatabaseUrl(): string {
  return process.env.DATABASE_URL ?? LOCAL_POSTGRES_URL
}

/** Raw SQL on a connection of its own: how the suites look at the database. */
export interface Inspector {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>
  close(): Promise<void>
}

/** An {@link Inspector} on its own pg pool (a separate connection from the code under test). */
export function serverInspector(url = testDatabaseUrl()): Inspector {
  const pool = new pg.Pool({ connectionString: url, max: 4 })
  pool.on('error', () => {})
  return {
    async query<T>(text: string, params: unknown[] = []) {
      return (await pool.query(text, params)).rows as T[]
    },
    close: () => pool.end(),
  }
}

/**
 * The MySQL/MariaDB server the tests use: `MYSQL_URL`, which the repository's vitest `globalSetup`
 * sets to the server it chose when the run's dialects include `mysql` (as for
 * {@link testDatabaseUrl}); otherwise `MYSQL_URL` when set, else the local server at
 * 127.0.0.1:3306 (database `test`, user root without password).
 */
export function testMysqlUri(): string {
  return process.env.MYSQL_URL ?? LOCAL_MYSQL_URL
}

/**
 * An {@link Inspector} on its own mysql2/promise pool. SQL uses `?` placeholders; DATETIME values
 * are read as UTC and DECIMAL results as numbers; a statement that returns no rows yields `[]`.
 */
export function mysqlInspector(uri = testMysqlUri()): Inspector {
  const pool = mysql.createPool({
    uri,
    connectionLimit: 4,
    timezone: 'Z',
    decimalNumbers: true,
    supportBigNumbers: true,
    charset: 'utf8mb4',
  })
  pool.on('connection', (c) => c.on('error', () => {}))
  return {
    async query<T>(text: string, params: unknown[] = []) {
      const [rows] = await pool.query(text, params)
      return (Array.isArray(rows) ? rows : []) as T[]
    },
    close: () => pool.end(),
  }
}

/**
 * An {@link Inspector} on its own better-sqlite3 connection to `filename` (10 s busy timeout;
 * the journal mode is left as the file has it). SQL uses `?` placeholders; booleans are bound as 0/1; a statement that returns no
 * rows yields `[]`.
 */
export function sqliteInspector(filename: string): Inspector {
  const db = new Database(filename)
  db.pragma('busy_timeout = 10000')
  return {
    async query<T>(text: string, params: unknown[] = []) {
      const stmt = db.prepare(text)
      const bound = params.map((v) => (typeof v === 'boolean' ? (v ? 1 : 0) : v))
      if (stmt.reader) return stmt.all(...bound) as T[]
      stmt.run(...bound)
      return []
    },
    async close() {
      db.close()
    },
  }
}

let counter = 0
/** A table name unique to this process and call, e.g. `ok_kysely_4821_3`. */
export function uniqueTableName(prefix: string): string {
  counter++
  return `ok_${prefix.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${process.pid}_${counter}`
}

/** Polls `check` every `intervalMs` until it returns a truthy value or `timeoutMs` passes. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  {
    timeoutMs = 10_000,
    intervalMs = 20,
    what = 'condition',
  }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value as NonNullable<T>
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}
