import { OutboxError } from '@outboxkit/core'
import { assertKnownOptions, formatValue, positiveMs } from '@outboxkit/core/adapter'
import type pg from 'pg'

/** Options common to both forms of {@link pgBackend}. */
export interface PgBackendCommonOptions {
  /**
   * Bound on every relay statement, in ms. A frozen or unreachable server then fails the claim or
   * settle with `OutboxError('TIMEOUT')` within this bound (the relay backs off and retries)
   * instead of hanging until the OS gives up on TCP. Recommended.
   *
   * @defaultValue none: no bound
   */
  commandTimeoutMs?: number
  /**
   * Send claim, settle, lease extension and stats as named prepared statements (one per statement
   * text and connection): PostgreSQL then parses and plans each once per connection. Needs a
   * direct connection to PostgreSQL, or a pooler that tracks prepared statements (PgBouncer 1.21+
   * with `max_prepared_statements` > 0, or session mode): through PgBouncer in transaction mode
   * without that, they fail with `prepared statement "..." does not exist` / `already exists`.
   * Default `false` (unnamed statements, which work through any pooler).
   *
   * @defaultValue `false`
   */
  preparedStatements?: boolean
  /**
   * A connection string used only for the relay's LISTEN connection, e.g. a direct connection to
   * PostgreSQL while `pool` / `connectionString` go through a transaction-mode pooler (PgBouncer,
   * Supavisor, RDS Proxy), where LISTEN cannot work. Claims, settles and the NOTIFYs of publish
   * keep going through the pooler; only the wake-ups use this connection. Put TLS and the rest in
   * the string (`?sslmode=require`, ...). Default: the same server as the pool.
   *
   * @defaultValue none: a connection of its own to the pool's server
   */
  listenConnectionString?: string
  /**
   * After each LISTEN, the backend sends a probe NOTIFY through the pool and waits this long for
   * the listening connection to hear it. When it does not (a transaction-mode pooler hands the
   * notification to whichever client holds the server connection), the relay is told once that
   * LISTEN is unavailable (its `listenUnavailable` event and one warn log line) and keeps
   * delivering by polling. In ms.
   *
   * @defaultValue `2_000`
   */
  listenProbeTimeoutMs?: number
}

/** {@link pgBackend} on a pool you own: outboxkit never ends it. */
export interface PgBackendPoolOptions extends PgBackendCommonOptions {
  pool: pg.Pool
}

/** {@link pgBackend} on a pool outboxkit creates, owns and ends in `close()` (and so in `relay.stop()`). */
export interface PgBackendConnectionOptions
  extends PgBackendCommonOptions,
    Omit<pg.PoolConfig, 'connectionString'> {
  connectionString: string | undefined
}

/** Options of {@link pgBackend}. */
export type PgBackendOptions = PgBackendPoolOptions | PgBackendConnectionOptions

/** The adapter name in error messages. */
export const SOURCE = 'pg'
/** The options of outboxkit itself, in both forms of {@link pgBackend}. */
const OWN_OPTIONS = [
  'commandTimeoutMs',
  'preparedStatements',
  'listenConnectionString',
  'listenProbeTimeoutMs',
] as const satisfies readonly (keyof PgBackendCommonOptions)[]
/** Every option of pg.Pool (pg 8), which {@link pgBackend} passes on to the pool it creates. */
const PG_POOL_OPTIONS = [
  'user',
  'database',
  'password',
  'port',
  'host',
  'connectionString',
  'keepAlive',
  'stream',
  'statement_timeout',
  'ssl',
  'enableChannelBinding',
  'sslnegotiation',
  'query_timeout',
  'lock_timeout',
  'keepAliveInitialDelayMillis',
  'idle_in_transaction_session_timeout',
  'application_name',
  'fallback_application_name',
  'connectionTimeoutMillis',
  'types',
  'options',
  'client_encoding',
  'pipeline',
  'max',
  'min',
  'idleTimeoutMillis',
  'log',
  'Promise',
  'allowExitOnIdle',
  'maxUses',
  'maxLifetimeSeconds',
  'Client',
  'onConnect',
  'verify',
] as const satisfies readonly (keyof pg.PoolConfig)[]
// Fails to compile when @types/pg adds a pool option that the list above lacks.
const poolOptionsListed: Exclude<keyof pg.PoolConfig, (typeof PG_POOL_OPTIONS)[number]> extends never
  ? true
  : never = true
void poolOptionsListed
const POOL_FORM: readonly string[] = ['pool', ...OWN_OPTIONS]
const CONNECTION_FORM: readonly string[] = [...OWN_OPTIONS, ...PG_POOL_OPTIONS]

/** The options of {@link pgBackend}, checked, with their defaults. */
export interface CheckedPgBackendOptions {
  timeoutMs: number | undefined
  prepared: boolean
  listenUrl: string | undefined
  probeMs: number
  /** The pool given by the caller; undefined: outboxkit owns one. */
  userPool: pg.Pool | undefined
}

/**
 * Checks the options of {@link pgBackend} (the known names of its form, then each value).
 * @throws OutboxError `INVALID_CONFIG` for invalid options.
 */
export function checkPgBackendOptions(options: PgBackendOptions): CheckedPgBackendOptions {
  if (!options || typeof options !== 'object') {
    throw new OutboxError('INVALID_CONFIG', 'pgBackend expects { pool } or { connectionString }.', {
      source: SOURCE,
    })
  }
  if ('pool' in options) {
    assertKnownOptions(options, POOL_FORM, { source: SOURCE, what: 'pgBackend({ pool })' })
  } else {
    assertKnownOptions(options, CONNECTION_FORM, {
      source: SOURCE,
      what: 'pgBackend({ connectionString })',
      valid: `${OWN_OPTIONS.join(', ')} and the options of pg.Pool (${PG_POOL_OPTIONS.join(', ')})`,
    })
  }
  const timeoutMs = positiveMs('commandTimeoutMs', options.commandTimeoutMs, undefined, SOURCE)
  const prepared = options.preparedStatements ?? false
  if (typeof prepared !== 'boolean') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `preparedStatements must be true or false, got ${formatValue(prepared)}.`,
      { source: SOURCE },
    )
  }
  const listenUrl = options.listenConnectionString
  if (listenUrl !== undefined && (typeof listenUrl !== 'string' || listenUrl === '')) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `listenConnectionString must be a non-empty connection string, got ${formatValue(listenUrl)}.`,
      { source: SOURCE },
    )
  }
  const probeMs = positiveMs('listenProbeTimeoutMs', options.listenProbeTimeoutMs, 2_000, SOURCE)
  const userPool = 'pool' in options ? options.pool : undefined
  if ('pool' in options && (!userPool || typeof userPool.query !== 'function')) {
    throw new OutboxError('INVALID_CONFIG', 'pgBackend({ pool }) needs a pg Pool.', { source: SOURCE })
  }
  return { timeoutMs, prepared, listenUrl, probeMs, userPool }
}

/** The config of the pool outboxkit creates: the pg.Pool options given, `max` 10 unless told. */
export function ownedPoolConfig(
  options: PgBackendConnectionOptions,
  timeoutMs: number | undefined,
): pg.PoolConfig {
  const {
    commandTimeoutMs: _t,
    preparedStatements: _p,
    listenConnectionString: _l,
    listenProbeTimeoutMs: _m,
    ...poolConfig
  } = options
  return {
    max: 10,
    ...poolConfig,
    ...(timeoutMs !== undefined
      ? { connectionTimeoutMillis: poolConfig.connectionTimeoutMillis ?? timeoutMs }
      : {}),
  }
}
