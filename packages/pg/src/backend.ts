import { type OutboxBackend, OutboxError } from '@outboxkit/core'
import { assertKnownOptions, createPostgresBackend, positiveMs } from '@outboxkit/core/adapter'
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
  /** Use named prepared statements for claim and settle (faster). Default `true`. */
  preparedStatements?: boolean
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
 * @example
 * ```ts
 * const backend = pgBackend({ connectionString: process.env.DATABASE_URL, commandTimeoutMs: 5_000 })
 * await migrate(outbox, backend)
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
  const prepared = options.preparedStatements ?? true
  const userPool = 'pool' in options ? options.pool : undefined
  if ('pool' in options && (!userPool || typeof userPool.query !== 'function')) {
    throw new OutboxError('INVALID_CONFIG', 'pgBackend({ pool }) needs a pg Pool.', { source: SOURCE })
  }
  let ownedConfig: pg.PoolConfig | undefined
  if (!userPool) {
    const {
      commandTimeoutMs: _t,
      preparedStatements: _p,
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
    userPool ? (userPool as unknown as { options: pg.ClientConfig }).options : ownedConfig!

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
      await deadline(
        pool().query({
          text: script,
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
      )
    },
    async close() {
      const p = ownedPool
      ownedPool = undefined
      await p?.end()
    },
  })
}
