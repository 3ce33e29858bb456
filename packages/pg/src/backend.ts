import { type OutboxBackend, OutboxError } from '@outboxkit/core'
import { assertKnownOptions, createPostgresBackend, formatValue, positiveMs } from '@outboxkit/core/adapter'
import pg from 'pg'
import { listenWithReconnect } from './listener.js'

/** Options common to both forms of {@link pgBackend}. */
export interface PgBackendCommonOptions {
  /**
   * Bound on every relay statement, in ms. A frozen or unreachable server then fails the claim or
   * settle with `OutboxError('TIMEOUT')` within this bound (the relay backs off and retries)
   * instead of hanging until the OS gives up on TCP. Recommended. Default: none.
   */
  commandTimeoutMs?: number
  /**
   * Send claim, settle, lease extension and stats as named prepared statements (one per statement
   * text and connection): PostgreSQL then parses and plans each once per connection. Needs a
   * direct connection to PostgreSQL, or a pooler that tracks prepared statements (PgBouncer 1.21+
   * with `max_prepared_statements` > 0, or session mode): through PgBouncer in transaction mode
   * without that, they fail with `prepared statement "..." does not exist` / `already exists`.
   * Default `false` (unnamed statements, which work through any pooler).
   */
  preparedStatements?: boolean
  /**
   * A connection string used only for the relay's LISTEN connection, e.g. a direct connection to
   * PostgreSQL while `pool` / `connectionString` go through a transaction-mode pooler (PgBouncer,
   * Supavisor, RDS Proxy), where LISTEN cannot work. Claims, settles and the NOTIFYs of publish
   * keep going through the pooler; only the wake-ups use this connection. Put TLS and the rest in
   * the string (`?sslmode=require`, ...). Default: the same server as the pool.
   */
  listenConnectionString?: string
  /**
   * After each LISTEN, the backend sends a probe NOTIFY through the pool and waits this long for
   * the listening connection to hear it. When it does not (a transaction-mode pooler hands the
   * notification to whichever client holds the server connection), the relay is told once that
   * LISTEN is unavailable (its `listenUnavailable` event and one warn log line) and keeps
   * delivering by polling. In ms. Default 2000.
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

const SOURCE = 'pg'
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

function deadline<T>(promise: Promise<T>, ms: number | undefined, what: string): Promise<T> {
  if (ms === undefined) return promise
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    // A little slack over the driver's own query_timeout, so the driver's error wins when it fires.
    timer = setTimeout(
      () =>
        reject(
          new OutboxError(
            'TIMEOUT',
            `${what} did not answer within ${ms} ms (commandTimeoutMs). Check that PostgreSQL is reachable.`,
            { source: SOURCE },
          ),
        ),
      ms + 50,
    )
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/**
 * The relay backend for node-postgres. Give it your `pool` (it stays yours: `relay.stop()` leaves
 * it open) or a `connectionString` (outboxkit creates the pool lazily and ends it on close).
 * LISTEN runs on a dedicated client that reconnects by itself.
 *
 * Works through PgBouncer in transaction mode with no option set: every statement is unnamed and
 * autocommit (or one implicit transaction for `migrate`), with no session `SET` and no startup
 * parameter (`commandTimeoutMs` is applied by the client and, for `migrate`, by a `SET LOCAL`).
 * Do not pass `statement_timeout`, `lock_timeout`, `idle_in_transaction_session_timeout` or
 * `options` to a pool that goes through PgBouncer: pg sends them as startup parameters, which it
 * refuses. LISTEN cannot hear through such a pooler: the relay finds out with a probe NOTIFY,
 * says so once and polls; give it `listenConnectionString` (a direct connection) for wake-ups.
 *
 * @example
 * ```ts
 * const backend = pgBackend({ connectionString: process.env.DATABASE_URL, commandTimeoutMs: 5_000 })
 * await migrate(outbox, backend)
 * // Behind PgBouncer in transaction mode, wake-ups on a direct connection:
 * pgBackend({ connectionString: process.env.POOLED_URL, listenConnectionString: process.env.DIRECT_URL })
 * ```
 * @throws OutboxError `INVALID_CONFIG` for invalid options.
 */
export function pgBackend(options: PgBackendOptions): OutboxBackend {
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
  let ownedConfig: pg.PoolConfig | undefined
  if (!userPool) {
    const {
      commandTimeoutMs: _t,
      preparedStatements: _p,
      listenConnectionString: _l,
      listenProbeTimeoutMs: _m,
      ...poolConfig
    } = options as PgBackendConnectionOptions
    ownedConfig = {
      max: 10,
      ...poolConfig,
      ...(timeoutMs !== undefined
        ? { connectionTimeoutMillis: poolConfig.connectionTimeoutMillis ?? timeoutMs }
        : {}),
    }
  }
  let ownedPool: pg.Pool | undefined
  const pool = (): pg.Pool => {
    if (userPool) return userPool
    if (!ownedPool) {
      ownedPool = new pg.Pool(ownedConfig)
      // An idle client's error (server restart, terminated backend) must not crash the process.
      ownedPool.on('error', () => {})
    }
    return ownedPool
  }
  const clientConfig = (): pg.ClientConfig =>
    listenUrl !== undefined
      ? {
          connectionString: listenUrl,
          ...(timeoutMs !== undefined ? { connectionTimeoutMillis: timeoutMs } : {}),
        }
      : userPool
        ? (userPool as unknown as { options: pg.ClientConfig }).options
        : ownedConfig!

  return createPostgresBackend({
    name: SOURCE,
    query(text, params, name) {
      const config: pg.QueryConfig & { query_timeout?: number } = { text, values: params as unknown[] }
      if (prepared && name) config.name = name
      if (timeoutMs !== undefined) config.query_timeout = timeoutMs
      return deadline(
        pool()
          .query(config)
          .then((r) => r.rows),
        timeoutMs,
        'a relay statement',
      )
    },
    async exec(script) {
      // One simple query: one implicit transaction, so the SET LOCAL bounds the script on the
      // server too (no startup parameter, nothing left on the session).
      await deadline(
        pool().query({
          text: timeoutMs ? `SET LOCAL statement_timeout = ${Math.ceil(timeoutMs * 4)};\n${script}` : script,
          ...(timeoutMs ? { query_timeout: timeoutMs * 4 } : {}),
        } as pg.QueryConfig),
        timeoutMs && timeoutMs * 4,
        'migrate',
      )
    },
    listen(channel, handlers) {
      return listenWithReconnect(
        async () => {
          const client = new pg.Client({ ...clientConfig(), keepAlive: true })
          client.on('error', () => {})
          await deadline(client.connect(), timeoutMs, 'the LISTEN connection').catch(async (err) => {
            await client.end().catch(() => {})
            throw err
          })
          return client
        },
        channel,
        handlers,
        {
          timeoutMs: probeMs,
          async send(payload) {
            await deadline(
              pool().query({
                text: 'SELECT pg_notify($1, $2)',
                values: [channel, payload],
                ...(timeoutMs !== undefined ? { query_timeout: timeoutMs } : {}),
              } as pg.QueryConfig),
              timeoutMs,
              'the LISTEN probe',
            )
          },
          advice:
            listenUrl === undefined
              ? 'give the relay a direct connection for LISTEN: pgBackend({ ..., listenConnectionString })'
              : 'check that listenConnectionString reaches the same database as the pool, directly (not through a transaction-mode pooler)',
        },
      )
    },
    async close() {
      const p = ownedPool
      ownedPool = undefined
      await p?.end()
    },
  })
}
