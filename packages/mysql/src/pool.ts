import { OutboxError } from '@outboxkit/core'
import {
  type MysqlExecutor,
  type MysqlResult,
  toMysqlOutboxError,
  toMysqlResult,
} from '@outboxkit/core/adapter'
import mysql, { type Pool, type PoolConnection, type PoolOptions } from 'mysql2/promise'

// The mysql2 pool under mysqlBackend and how its statements run on the pool's connections:
// bounded by commandTimeoutMs, a broken connection destroyed, transactions at READ COMMITTED.

/** The source named in errors of `@outboxkit/mysql`. */
export const SOURCE = 'mysql'

const QUERY_OPTIONS = { rowsAsArray: false, nestTables: false, typeCast: true } as const

/** mysql2's callback-style connection, as the pool's `connection` event gives it. */
interface CoreConnection {
  on(event: 'error', listener: () => void): void
  query(sql: string, callback: (err: Error | null) => void): void
}

function timeoutError(what: string, ms: number): OutboxError {
  return new OutboxError(
    'TIMEOUT',
    `${what} did not answer within ${ms} ms (commandTimeoutMs). Check that MySQL is reachable and not locked.`,
    { source: SOURCE },
  )
}

/** Races `promise` against `ms` (+ a little slack, so the driver's own timeout wins when it fires). */
function deadline<T>(promise: Promise<T>, ms: number | undefined, what: string): Promise<T> {
  if (ms === undefined) return promise
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError(what, ms)), ms + 50)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

const isTimeout = (err: unknown) => toMysqlOutboxError(err, SOURCE, '').code === 'TIMEOUT'
/** The connection cannot be trusted any more: lost, or a statement on it timed out (and may still run). */
const isBroken = (err: unknown) => isTimeout(err) || (err as { fatal?: unknown } | undefined)?.fatal === true

/** The pool a backend runs on: a user's, or one the backend creates on first use and ends on close. */
export interface BackendPool {
  /** The pool (created now when the backend owns it and has none). */
  pool(): Pool
  /**
   * Connections whose session is READ COMMITTED already: their transactions skip the
   * per-transaction SET (one round trip less per claim and settle). Only the owned pool's: a
   * user's pool is never changed at session level.
   */
  readonly readCommitted: WeakSet<object>
  /** Ends the pool the backend created (a later use creates a new one); never a user's pool. */
  end(): Promise<void>
}

/** A {@link BackendPool} on a user's pool, which outboxkit never ends. */
export function userPool(pool: Pool): BackendPool {
  return { pool: () => pool, readCommitted: new WeakSet(), end: async () => {} }
}

/** A {@link BackendPool} that outboxkit creates from `config` on first use, owns and ends. */
export function ownedPool(config: PoolOptions): BackendPool {
  let created: Pool | undefined
  const readCommitted = new WeakSet<object>()
  return {
    readCommitted,
    pool(): Pool {
      if (!created) {
        created = mysql.createPool(config)
        created.on('connection', (c) => {
          const core = c as unknown as CoreConnection
          // An idle connection's error (server restart, killed connection) must not crash the process.
          core.on('error', () => {})
          core.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED', (err) => {
            if (!err) readCommitted.add(core)
          })
        })
      }
      return created
    },
    async end() {
      const p = created
      created = undefined
      await p?.end()
    },
  }
}

async function acquire(pools: BackendPool, timeoutMs: number | undefined): Promise<PoolConnection> {
  const pending = pools.pool().getConnection()
  try {
    return await deadline(pending, timeoutMs, 'waiting for a MySQL connection')
  } catch (err) {
    // A connection that arrives after the deadline goes straight back to the pool.
    pending.then(
      (c) => c.release(),
      () => {},
    )
    throw err
  }
}

async function run(
  conn: PoolConnection,
  sql: string,
  params: readonly unknown[],
  timeoutMs: number | undefined,
): Promise<MysqlResult> {
  const [result] = await deadline(
    conn.query({
      sql,
      values: params as unknown[],
      ...QUERY_OPTIONS,
      ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
    }),
    timeoutMs,
    'a relay statement',
  )
  return toMysqlResult(result)
}

/** Runs `fn` on a pooled connection; a connection left broken is destroyed, never reused. */
async function withConnection<T>(
  pools: BackendPool,
  timeoutMs: number | undefined,
  fn: (conn: PoolConnection, markBroken: () => void) => Promise<T>,
): Promise<T> {
  const conn = await acquire(pools, timeoutMs)
  let broken = false
  try {
    return await fn(conn, () => {
      broken = true
    })
  } catch (err) {
    if (isBroken(err)) broken = true
    throw err
  } finally {
    if (broken) conn.destroy()
    else conn.release()
  }
}

/**
 * The {@link MysqlExecutor} of a backend on `pools`, every statement bounded by `timeoutMs`:
 * `query` on any pooled connection, `transaction` at READ COMMITTED on one.
 */
export function mysql2Executor(pools: BackendPool, timeoutMs: number | undefined): MysqlExecutor {
  return {
    name: SOURCE,
    query: (sql, params) => withConnection(pools, timeoutMs, (conn) => run(conn, sql, params, timeoutMs)),
    transaction<T>(
      fn: (query: (sql: string, params: readonly unknown[]) => Promise<MysqlResult>) => Promise<T>,
    ) {
      return withConnection(pools, timeoutMs, async (conn, markBroken) => {
        const core = (conn as unknown as { connection?: object }).connection
        if (!core || !pools.readCommitted.has(core))
          await run(conn, 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED', [], timeoutMs)
        await run(conn, 'START TRANSACTION', [], timeoutMs)
        let result: T
        try {
          result = await fn((sql, params) => run(conn, sql, params, timeoutMs))
        } catch (err) {
          // After a timeout the connection is destroyed instead: the server rolls back.
          if (!isBroken(err)) await run(conn, 'ROLLBACK', [], timeoutMs).catch(markBroken)
          throw err
        }
        await run(conn, 'COMMIT', [], timeoutMs)
        return result
      })
    },
    close: () => pools.end(),
  }
}
