import { type OutboxBackend, OutboxError } from '@outboxkit/core'
import { assertKnownOptions, createMysqlBackend, positiveMs } from '@outboxkit/core/adapter'
import type { Pool, PoolOptions } from 'mysql2/promise'
import { mysql2Executor, ownedPool, SOURCE, userPool } from './pool.js'

/** Options common to both forms of {@link mysqlBackend}. */
export interface MysqlBackendCommonOptions {
  /**
   * Bound on every relay statement (and on waiting for a pooled connection), in ms. A frozen or
   * unreachable server then fails the claim or settle with `OutboxError('TIMEOUT')` within this
   * bound (the relay backs off and retries) instead of hanging until the OS gives up on TCP. The
   * connection of a statement that timed out is destroyed, never returned to the pool (the
   * server rolls its transaction back). Recommended.
   *
   * @defaultValue none: no bound
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

/** Throws `INVALID_CONFIG` unless `options` is an object of one form's options only. */
function assertOptionNames(options: MysqlBackendOptions): void {
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
}

/** The user's pool of `{ pool }`, as a mysql2/promise pool. */
function givenPool(pool: Pool | undefined): Pool {
  const given = pool as (Pool & { promise?: () => Pool; pool?: unknown }) | undefined
  if (!given || typeof given.getConnection !== 'function') {
    throw invalid('mysqlBackend({ pool }) needs a mysql2 pool (mysql.createPool from mysql2/promise).')
  }
  // A callback-style pool has promise() and no `.pool`; its promise wrapper shares its connections.
  return typeof given.promise === 'function' && given.pool === undefined ? given.promise() : given
}

/** The config of the pool outboxkit creates for `{ uri, ...poolOptions }`. */
function ownedPoolConfig(options: MysqlBackendUriOptions, timeoutMs: number | undefined): PoolOptions {
  const { commandTimeoutMs: _t, uri, ...poolOptions } = options
  if (typeof uri !== 'string' || uri.length === 0) {
    throw invalid('mysqlBackend({ uri }) needs a connection URI like mysql://user@host:3306/database.')
  }
  return {
    connectionLimit: 10,
    ...poolOptions,
    uri,
    ...(timeoutMs !== undefined ? { connectTimeout: poolOptions.connectTimeout ?? timeoutMs } : {}),
  }
}

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
  assertOptionNames(options)
  const timeoutMs = positiveMs('commandTimeoutMs', options.commandTimeoutMs, undefined, SOURCE)
  const pools =
    'pool' in options
      ? userPool(givenPool(options.pool))
      : ownedPool(ownedPoolConfig(options as MysqlBackendUriOptions, timeoutMs))
  return createMysqlBackend(mysql2Executor(pools, timeoutMs))
}
