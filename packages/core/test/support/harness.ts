import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  inMysqlTransaction,
  inPgTransaction,
  type OutboxDialect,
  type OutboxSql,
  outboxSql,
  RelayFixture,
  type RowChanges,
  type RowFilter,
  removeSqliteFile,
  runTransaction,
  type SeedRow,
  tableSql,
  testDatabaseUrl,
  testMysqlUri,
} from '@outboxkit/conformance'
import type { Outbox, OutboxBackend, PublishMessage, PublishResult } from '@outboxkit/core'
import {
  type PgBackendConnectionOptions,
  pgBackend,
  publish as pgPublish,
  publishMany as pgPublishMany,
} from '@outboxkit/pg'
import { postgresJsBackend } from '@outboxkit/postgres-js'
import type BetterSqlite3 from 'better-sqlite3'
import type * as mysql2 from 'mysql2/promise'
import pg from 'pg'
import { afterAll, afterEach, beforeAll } from 'vitest'

export {
  collect,
  type Deferred,
  deferred,
  messages,
  nextEvent,
  observeFor,
  tableSql,
} from '@outboxkit/conformance'

/** Calls of a {@link wrapBackend} backend, live. */
export interface BackendCalls {
  claim: number
  settle: number
  /** Every settlement the relay sent, in order. */
  settlements: { id: string; attempts: number; outcome: string }[]
}

/**
 * Wraps a backend to count its calls; `beforeSettle` (optional) runs before each settle is
 * passed on, so a test can hold a settle back.
 */
export function wrapBackend(
  inner: OutboxBackend,
  hooks: { beforeSettle?: () => Promise<void> } = {},
): { backend: OutboxBackend; calls: BackendCalls } {
  const calls: BackendCalls = { claim: 0, settle: 0, settlements: [] }
  const backend: OutboxBackend = {
    ...inner,
    claim(request) {
      calls.claim++
      return inner.claim(request)
    },
    async settle(request) {
      calls.settle++
      for (const s of request.settlements)
        calls.settlements.push({ id: s.id, attempts: s.attempts, outcome: s.outcome })
      await hooks.beforeSettle?.()
      return inner.settle(request)
    },
  }
  return { backend, calls }
}

/** One outbox row as the tests read it through raw SQL. */
export interface Row {
  id: string
  topic: string
  state: string
  attempts: number
  last_error: string | null
  payload: unknown
  /** `available_at - now()` in ms (negative: due). */
  due_in_ms: number
  available_at: Date
}

/** A transaction of the harness, the same on every dialect. */
export interface HarnessTx {
  /** Raw SQL inside the transaction, in the dialect's SQL (`$1` PostgreSQL, `?` MySQL and SQLite). */
  query(text: string, params?: unknown[]): Promise<void>
  /** The dialect's adapter `publish` (pg, mysql, sqlite) on this transaction. */
  publish<O extends Outbox<any>>(outbox: O, message: PublishMessage<O>): Promise<PublishResult>
  /** The dialect's adapter `publishMany` on this transaction. */
  publishMany<O extends Outbox<any>>(outbox: O, messages: PublishMessage<O>[]): Promise<PublishResult[]>
}

/** Extra options for {@link Harness.backend}: the dialect backend's own connection options. */
export type BackendOptions = Partial<PgBackendConnectionOptions> & Record<string, unknown>

type MysqlModule = typeof import('@outboxkit/mysql')
type SqliteModule = typeof import('@outboxkit/sqlite')

/**
 * Per-file test harness on a real database of one dialect (default PostgreSQL): one connection
 * (pool) for publishing and raw SQL, unique tables (dropped in {@link Harness.close}), relays and
 * backends that are always stopped.
 *
 * - `postgres`: the server of `DATABASE_URL`; pg pool; `pgBackend`; `@outboxkit/pg` publish.
 * - `mysql`: the server of `MYSQL_URL`; mysql2/promise pool; `mysqlBackend`; `@outboxkit/mysql`.
 * - `sqlite`: a fresh database file under the OS temp dir (WAL); one better-sqlite3 connection
 *   for the harness, a connection of its own for each backend; `@outboxkit/sqlite`.
 *
 * MySQL and SQLite load their packages in {@link Harness.init} (use {@link useHarness}), so files
 * that only run PostgreSQL never load them.
 */
export class Harness extends RelayFixture {
  readonly dialect: OutboxDialect
  /** PostgreSQL / MySQL connection URL, or the SQLite database file. */
  readonly url: string
  /** The raw SQL of the conformance suites, on the harness connection. */
  readonly sql: OutboxSql
  #pgPool: pg.Pool | undefined
  #mysqlPool: mysql2.Pool | undefined
  #sqliteDb: BetterSqlite3.Database | undefined
  #mysql: MysqlModule | undefined
  #sqlite: SqliteModule | undefined
  #ready: Promise<void> | undefined

  constructor(dialect: OutboxDialect = 'postgres') {
    super('core')
    this.dialect = dialect
    this.url =
      dialect === 'postgres'
        ? testDatabaseUrl()
        : dialect === 'mysql'
          ? testMysqlUri()
          : join(
              tmpdir(),
              `outboxkit-core-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}.db`,
            )
    if (dialect === 'postgres') {
      this.#pgPool = new pg.Pool({ connectionString: this.url, max: 12 })
      this.#pgPool.on('error', () => {})
    }
    this.sql = outboxSql(dialect, (text, params) => this.query(text, params))
  }

  /** Opens the dialect's connection and loads its package (PostgreSQL: nothing to do). Idempotent. */
  init(): Promise<void> {
    this.#ready ??= (async () => {
      if (this.dialect === 'mysql') {
        const [{ default: mysql }, mod] = await Promise.all([
          import('mysql2/promise'),
          import('@outboxkit/mysql'),
        ])
        this.#mysql = mod
        this.#mysqlPool = mysql.createPool({
          uri: this.url,
          connectionLimit: 12,
          timezone: 'Z',
          decimalNumbers: true,
          supportBigNumbers: true,
          charset: 'utf8mb4',
        })
        this.#mysqlPool.on('connection', (c) => c.on('error', () => {}))
      } else if (this.dialect === 'sqlite') {
        const [{ default: Database }, mod] = await Promise.all([
          import('better-sqlite3'),
          import('@outboxkit/sqlite'),
        ])
        this.#sqlite = mod
        this.#sqliteDb = new Database(this.url)
        this.#sqliteDb.pragma('journal_mode = WAL')
        this.#sqliteDb.pragma('busy_timeout = 10000')
      }
    })()
    return this.#ready
  }

  /** The harness pg pool (PostgreSQL only). */
  get pool(): pg.Pool {
    if (!this.#pgPool) throw new Error(`Harness.pool is PostgreSQL's; this harness runs ${this.dialect}`)
    return this.#pgPool
  }

  #mysqlReady(): { pool: mysql2.Pool; mod: MysqlModule } {
    if (!this.#mysqlPool || !this.#mysql) throw new Error('call Harness.init() (useHarness) first')
    return { pool: this.#mysqlPool, mod: this.#mysql }
  }

  #sqliteReady(): { db: BetterSqlite3.Database; mod: SqliteModule } {
    if (!this.#sqliteDb || !this.#sqlite) throw new Error('call Harness.init() (useHarness) first')
    return { db: this.#sqliteDb, mod: this.#sqlite }
  }

  /**
   * Raw SQL on the harness connection, written for the dialect (`$1` PostgreSQL, `?` MySQL and
   * SQLite). Returns the rows (none for statements without a result set).
   */
  async query<T = Record<string, any>>(text: string, params: unknown[] = []): Promise<T[]> {
    if (this.dialect === 'postgres') return (await this.pool.query(text, params)).rows as T[]
    await this.init()
    if (this.dialect === 'mysql') {
      const [rows] = await this.#mysqlReady().pool.query(text, params)
      return (Array.isArray(rows) ? rows : []) as T[]
    }
    const stmt = this.#sqliteReady().db.prepare(text)
    const bound = params.map((v) => (typeof v === 'boolean' ? (v ? 1 : 0) : v))
    if (stmt.reader) return stmt.all(...bound) as T[]
    stmt.run(...bound)
    return []
  }

  /**
   * A backend on the harness's own connection (pool), which it does not own: PostgreSQL
   * `pgBackend({ pool })`, MySQL `mysqlBackend({ pool })`, SQLite `sqliteBackend(db)`.
   */
  async sharedBackend(): Promise<OutboxBackend> {
    if (this.dialect === 'postgres') return pgBackend({ pool: this.pool })
    await this.init()
    if (this.dialect === 'mysql') {
      const { pool, mod } = this.#mysqlReady()
      return mod.mysqlBackend({ pool })
    }
    const { db, mod } = this.#sqliteReady()
    return mod.sqliteBackend(db)
  }

  /**
   * A backend that opens its own connections from the URL (PostgreSQL `pgBackend({
   * connectionString })`, or `postgresJsBackend({ url })` with OUTBOXKIT_PG_BACKEND=postgres-js, MySQL `mysqlBackend({ uri })`, SQLite `sqliteBackend({ filename })`),
   * closed in {@link Harness.cleanup}. `options` go to the dialect's backend.
   */
  backend(options: BackendOptions = {}): OutboxBackend {
    if (this.dialect === 'postgres' && process.env.OUTBOXKIT_PG_BACKEND === 'postgres-js')
      return this.owned(postgresJsBackend({ url: this.url, max: 4, ...(options as object) }))
    if (this.dialect === 'postgres')
      return this.owned(pgBackend({ connectionString: this.url, max: 4, ...options }))
    if (this.dialect === 'mysql')
      return this.owned(this.#mysqlReady().mod.mysqlBackend({ uri: this.url, ...options } as never))
    return this.owned(this.#sqliteReady().mod.sqliteBackend({ filename: this.url, ...options } as never))
  }

  /**
   * The source of a `{ imports, expression }` that builds a connection-string backend of this
   * dialect in another process. `src(pkg)` is the absolute path of a package's `src/index.ts`.
   */
  childBackendSource(src: (pkg: string) => string): { imports: string; expression: string } {
    const url = JSON.stringify(this.url)
    if (this.dialect === 'postgres')
      return {
        imports: `import { pgBackend } from ${JSON.stringify(src('pg'))}`,
        expression: `pgBackend({ connectionString: ${url} })`,
      }
    if (this.dialect === 'mysql')
      return {
        imports: `import { mysqlBackend } from ${JSON.stringify(src('mysql'))}`,
        expression: `mysqlBackend({ uri: ${url} })`,
      }
    return {
      imports: `import { sqliteBackend } from ${JSON.stringify(src('sqlite'))}`,
      expression: `sqliteBackend({ filename: ${url} })`,
    }
  }

  /**
   * Publishes `messages` with the dialect's adapter in one committed transaction on the harness
   * connection. SQLite: inside better-sqlite3's synchronous `db.transaction` (whose function
   * cannot return a promise), so the rows must be written before `publishMany` returns; its
   * promise is awaited after the commit.
   */
  async publish<O extends Outbox<any>>(outbox: O, messages: PublishMessage<O>[]): Promise<PublishResult[]> {
    if (this.dialect === 'sqlite') {
      await this.init()
      const { db, mod } = this.#sqliteReady()
      let pending: Promise<PublishResult[]> | undefined
      db.transaction(() => {
        pending = mod.publishMany(outbox, db, messages)
      })()
      return pending!
    }
    return this.inTransaction((tx) => tx.publishMany(outbox, messages))
  }

  /** Runs `fn` in a transaction on a pooled pg client: COMMIT when it resolves, ROLLBACK when it throws (PostgreSQL only). */
  transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inPgTransaction(this.pool, fn)
  }

  /**
   * Runs `fn` in a transaction of any dialect, through the driver's own API: COMMIT when it
   * resolves, ROLLBACK when it throws. SQLite: BEGIN ... COMMIT on the harness connection (one
   * harness transaction at a time).
   */
  async inTransaction<T>(fn: (tx: HarnessTx) => Promise<T>): Promise<T> {
    if (this.dialect === 'postgres') {
      return this.transaction((client) =>
        fn({
          query: async (text, params = []) => void (await client.query(text, params)),
          publish: (outbox, message) => pgPublish(outbox, client, message),
          publishMany: (outbox, messages) => pgPublishMany(outbox, client, messages),
        }),
      )
    }
    await this.init()
    if (this.dialect === 'mysql') {
      const { pool, mod } = this.#mysqlReady()
      return inMysqlTransaction(pool, (conn) =>
        fn({
          query: async (text, params = []) => void (await conn.query(text, params)),
          publish: (outbox, message) => mod.publish(outbox, conn, message),
          publishMany: (outbox, messages) => mod.publishMany(outbox, conn, messages),
        }),
      )
    }
    const { db, mod } = this.#sqliteReady()
    const exec = (sql: string) => () => db.exec(sql)
    return runTransaction(
      {
        begin: exec('BEGIN'),
        commit: exec('COMMIT'),
        rollback: () => db.inTransaction && db.exec('ROLLBACK'),
      },
      () =>
        fn({
          query: async (text, params = []) => void db.prepare(text).run(...params),
          publish: (outbox, message) => mod.publish(outbox, db, message),
          publishMany: (outbox, messages) => mod.publishMany(outbox, db, messages),
        }),
    )
  }

  /** Every row of the outbox table, or the row with `id`. */
  async rows(outbox: Outbox<any>, id?: string): Promise<Row[]> {
    if (this.dialect === 'postgres') {
      return this.query<Row>(
        `SELECT id::text AS id, topic, state, attempts, last_error, payload, available_at,
                (extract(epoch FROM available_at - now()) * 1000)::float8 AS due_in_ms
         FROM ${tableSql(outbox)} ${id ? 'WHERE id = $1' : ''} ORDER BY id`,
        id ? [id] : [],
      )
    }
    const rows = await this.sql.rows(outbox.table.name, id ? { id } : {})
    return rows.map((r) => ({
      id: r.id,
      topic: r.topic,
      state: r.state,
      attempts: r.attempts,
      last_error: r.last_error,
      payload: JSON.parse(r.payload_text),
      due_in_ms: r.due_in_ms,
      available_at: new Date(r.available_at_ms),
    }))
  }

  /** The row with `id`, or undefined when it does not exist. */
  async row(outbox: Outbox<any>, id: string): Promise<Row | undefined> {
    return (await this.rows(outbox, id))[0]
  }

  /** `count(*)` of the outbox rows matching `filter`. */
  count(outbox: Outbox<any>, filter?: RowFilter): Promise<number> {
    return this.sql.count(outbox.table.name, filter)
  }

  /** Inserts rows by raw SQL (bypassing publish); returns their ids in order. */
  insert(outbox: Outbox<any>, rows: SeedRow[]): Promise<string[]> {
    return this.sql.insert(outbox.table.name, rows)
  }

  /** Updates one row by raw SQL. */
  update(outbox: Outbox<any>, id: string, changes: RowChanges): Promise<void> {
    return this.sql.update(outbox.table.name, id, changes)
  }

  /** The database clock now, in epoch ms. */
  nowMs(): Promise<number> {
    return this.sql.nowMs()
  }

  /** {@link Harness.cleanup}, drops the tables, ends the connection (SQLite: deletes the file). */
  async close(): Promise<void> {
    await this.cleanup()
    if (this.dialect !== 'sqlite') {
      for (const t of this.tables) await this.sql.drop(t).catch(() => {})
    }
    await this.#pgPool?.end()
    await this.#mysqlPool?.end()
    if (this.#sqliteDb) {
      this.#sqliteDb.close()
      removeSqliteFile(this.url)
    }
  }
}

/**
 * A {@link Harness} for `dialect` with the file's hooks: `init` before all, `cleanup` after each
 * test, `close` after all.
 */
export function useHarness(dialect: OutboxDialect = 'postgres'): Harness {
  const h = new Harness(dialect)
  beforeAll(() => h.init())
  afterEach(() => h.cleanup())
  afterAll(() => h.close())
  return h
}
