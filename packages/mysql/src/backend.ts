import { type OutboxBackend, OutboxError } from '@outboxkit/core'
import {
  assertKnownOptions,
  createMysqlBackend,
  type MysqlResult,
  positiveMs,
  toMysqlOutboxError,
  toMysqlResult,
} from '@outboxkit/core/adapter'
import mysql, { type Pool, type PoolConnection, type PoolOptions } from 'mysql2/promise'

/** Options common to both forms of {@link mysqlBackend}. */
export interface MysqlBackendCommonOptions {
  /**
   * Bound on every relay statement (and on waiting for a pooled connection), in ms. A frozen or
   * unreachable server then fails the claim or settle with `OutboxError('TIMEOUT')` within this
   * bound (the relay backs off and retries) instead of hanging until the OS gives up on TCP. The
   * connection of a statement that timed out is destroyed, never returned to the pool (the
   * server rolls its transaction back). Recommended. Default: none.
   */
  commandTimeoutMs?: number
}

/** {@link mysqlBackend} on a mysql2 pool you own: outboxkit never ends it. */
export interface MysqlBackendPoolOptions extends MysqlBackendCommonOptions {
  /** A mysql2/promise pool (`mysql.createPool(...)`); a callback-style pool is used through its `promise()`. */
  pool: Pool
}

/**
 * {@link mysqlBackend} on a pool outboxkit creates from `uri` (and any other mysql2 pool
 * option), owns and ends in `close()` (and so in `relay.stop()`).
 */
export interface MysqlBackendUriOptions extends MysqlBackendCommonOptions, Omit<PoolOptions, 'uri'> {
  /** `mysql://user:password@host:3306/database`. */
  uri: string
}

/** Options of {@link mysqlBackend}. */
export type MysqlBackendOptions = MysqlBackendPoolOptions | MysqlBackendUriOptions

/** mysql2's callback-style connection, as the pool's `connection` event gives it. */
interface CoreConnection {
  on(event: 'error', listener: () => void): void
  query(sql: string, callback: (err: Error | null) => void): void
}

const SOURCE = 'mysql'
const QUERY_OPTIONS = { rowsAsArray: false, nestTables: false, typeCast: true } as const

function invalid(message: string): OutboxError {
  return new OutboxError('INVALID_CONFIG', message, { source: SOURCE })
}

/** The options of outboxkit itself, in both forms of {@link mysqlBackend}. */
const OWN_OPTIONS = ['commandTimeoutMs'] as const satisfies readonly (keyof MysqlBackendCommonOptions)[]
/** Every option of a mysql2 pool (mysql2 3) but `uri` and `pool`, which {@link mysqlBackend} passes on to the pool it creates. */
const MYSQL2_POOL_OPTIONS = [
  'decimalNumbers',
  'user',
  'password',
  'password1',
  'password2',
  'password3',
  'database',
  'charset',
  'host',
  'port',
  'localAddress',
  'socketPath',
  'timezone',
  'connectTimeout',
  'stringifyObjects',
  'insecureAuth',
  'infileStreamFactory',
  'typeCast',
  'queryFormat',
  'supportBigNumbers',
  'bigNumberStrings',
  'dateStrings',
  'debug',
  'trace',
  'multipleStatements',
  'flags',
  'ssl',
  'rowsAsArray',
  'enableKeepAlive',
  'keepAliveInitialDelay',
  'charsetNumber',
  'compress',
  'authSwitchHandler',
  'connectAttributes',
  'isServer',
  'maxPreparedStatements',
  'namedPlaceholders',
  'nestTables',
  'passwordSha1',
  'stream',
  'connectionLimit',
  'maxIdle',
  'idleTimeout',
  'Promise',
  'queueLimit',
  'waitForConnections',
  'disableEval',
  'enableCleartextPlugin',
  'authPlugins',
  'jsonStrings',
  'gracefulEnd',
  'resetOnRelease',
] as const satisfies readonly (keyof PoolOptions)[]
// Fails to compile when mysql2 adds a pool option that the list above lacks.
const poolOptionsListed: Exclude<
  keyof PoolOptions,
  (typeof MYSQL2_POOL_OPTIONS)[number] | 'uri' | 'pool'
> extends never
  ? true
  : never = true
void poolOptionsListed
const POOL_FORM: readonly string[] = ['pool', ...OWN_OPTIONS]
const URI_FORM: readonly string[] = ['uri', ...OWN_OPTIONS, ...MYSQL2_POOL_OPTIONS]

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

/**
 * The relay backend for MySQL 8+ and MariaDB 10.6+ on mysql2. Give it your `pool` (it stays
 * yours: `relay.stop()` leaves it open) or a `uri` (outboxkit creates the pool lazily and ends it
 * on close). Claims with `FOR UPDATE SKIP LOCKED` in short READ COMMITTED transactions. MySQL has
 * no LISTEN/NOTIFY: relays poll, so `pollIntervalMs` is the delivery latency of a quiet outbox.
 *
 * @example
 * ```ts
 * const backend = mysqlBackend({ uri: process.env.MYSQL_URL, commandTimeoutMs: 5_000 })
 * await migrate(outbox, backend)
 * ```
 * @throws OutboxError `INVALID_CONFIG` for invalid options.
 */
export function mysqlBackend(options: MysqlBackendOptions): OutboxBackend {
  if (!options || typeof options !== 'object') {
    throw invalid('mysqlBackend expects { pool } or { uri }.')
  }
  if ('pool' in options) {
    assertKnownOptions(options, POOL_FORM, { source: SOURCE, what: 'mysqlBackend({ pool })' })
  } else {
    assertKnownOptions(options, URI_FORM, {
      source: SOURCE,
      what: 'mysqlBackend({ uri })',
      valid: `uri, ${OWN_OPTIONS.join(', ')} and the options of mysql2's createPool (${MYSQL2_POOL_OPTIONS.join(', ')})`,
    })
  }
  const timeoutMs = positiveMs('commandTimeoutMs', options.commandTimeoutMs, undefined, SOURCE)
  let userPool: Pool | undefined
  let ownedConfig: PoolOptions | undefined
  if ('pool' in options) {
    const given = options.pool as (Pool & { promise?: () => Pool; pool?: unknown }) | undefined
    if (!given || typeof given.getConnection !== 'function') {
      throw invalid('mysqlBackend({ pool }) needs a mysql2 pool (mysql.createPool from mysql2/promise).')
    }
    // A callback-style pool has promise() and no `.pool`; its promise wrapper shares its connections.
    userPool = typeof given.promise === 'function' && given.pool === undefined ? given.promise() : given
  } else {
    const { commandTimeoutMs: _t, uri, ...poolOptions } = options as MysqlBackendUriOptions
    if (typeof uri !== 'string' || uri.length === 0) {
      throw invalid('mysqlBackend({ uri }) needs a connection URI like mysql://user@host:3306/database.')
    }
    ownedConfig = {
      connectionLimit: 10,
      ...poolOptions,
      uri,
      ...(timeoutMs !== undefined ? { connectTimeout: poolOptions.connectTimeout ?? timeoutMs } : {}),
    }
  }
  let ownedPool: Pool | undefined
  // Connections of the owned pool whose session is READ COMMITTED already: their transactions
  // skip the per-transaction SET (one round trip less per claim and settle). A user's pool is
  // never changed at session level.
  const readCommitted = new WeakSet<object>()
  const pool = (): Pool => {
    if (userPool) return userPool
    if (!ownedPool) {
      ownedPool = mysql.createPool(ownedConfig!)
      ownedPool.on('connection', (c) => {
        const core = c as unknown as CoreConnection
        // An idle connection's error (server restart, killed connection) must not crash the process.
        core.on('error', () => {})
        core.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED', (err) => {
          if (!err) readCommitted.add(core)
        })
      })
    }
    return ownedPool
  }

  async function acquire(): Promise<PoolConnection> {
    const pending = pool().getConnection()
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

  async function run(conn: PoolConnection, sql: string, params: readonly unknown[]): Promise<MysqlResult> {
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
    fn: (conn: PoolConnection, markBroken: () => void) => Promise<T>,
  ): Promise<T> {
    const conn = await acquire()
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

  return createMysqlBackend({
    name: SOURCE,
    query: (sql, params) => withConnection((conn) => run(conn, sql, params)),
    transaction<T>(
      fn: (query: (sql: string, params: readonly unknown[]) => Promise<MysqlResult>) => Promise<T>,
    ) {
      return withConnection(async (conn, markBroken) => {
        const core = (conn as unknown as { connection?: object }).connection
        if (!core || !readCommitted.has(core))
          await run(conn, 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED', [])
        await run(conn, 'START TRANSACTION', [])
        let result: T
        try {
          result = await fn((sql, params) => run(conn, sql, params))
        } catch (err) {
          // After a timeout the connection is destroyed instead: the server rolls back.
          if (!isBroken(err)) await run(conn, 'ROLLBACK', []).catch(markBroken)
          throw err
        }
        await run(conn, 'COMMIT', [])
        return result
      })
    },
    async close() {
      const p = ownedPool
      ownedPool = undefined
      await p?.end()
    },
  })
}
