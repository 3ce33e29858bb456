import type { OutboxBackend } from '@outboxkit/core'
import { createPostgresBackend, type WakeHandlers, type WakeSubscription } from '@outboxkit/core/adapter'
import pg from 'pg'
import {
  type CheckedPgBackendOptions,
  checkPgBackendOptions,
  ownedPoolConfig,
  type PgBackendConnectionOptions,
  type PgBackendOptions,
  SOURCE,
} from './backend-options.js'
import { deadline } from './deadline.js'
import { listenWithReconnect } from './listener.js'
import { replicateWithPg } from './replication.js'

export type {
  PgBackendCommonOptions,
  PgBackendConnectionOptions,
  PgBackendOptions,
  PgBackendPoolOptions,
} from './backend-options.js'

/** The pool of a backend (the caller's, or one outboxkit creates on first use) and the LISTEN client's config. */
interface BackendPool {
  pool(): pg.Pool
  clientConfig(): pg.ClientConfig
  /** Ends the pool outboxkit created, if any; never the caller's. */
  close(): Promise<void>
}

function backendPool(options: PgBackendOptions, checked: CheckedPgBackendOptions): BackendPool {
  const { userPool, listenUrl, timeoutMs } = checked
  const ownedConfig = userPool ? undefined : ownedPoolConfig(options as PgBackendConnectionOptions, timeoutMs)
  let ownedPool: pg.Pool | undefined
  return {
    pool() {
      if (userPool) return userPool
      if (!ownedPool) {
        ownedPool = new pg.Pool(ownedConfig)
        // An idle client's error (server restart, terminated backend) must not crash the process.
        ownedPool.on('error', () => {})
      }
      return ownedPool
    },
    clientConfig: () =>
      listenUrl !== undefined
        ? {
            connectionString: listenUrl,
            ...(timeoutMs !== undefined ? { connectionTimeoutMillis: timeoutMs } : {}),
          }
        : userPool
          ? (userPool as unknown as { options: pg.ClientConfig }).options
          : ownedConfig!,
    async close() {
      const p = ownedPool
      ownedPool = undefined
      await p?.end()
    },
  }
}

/** A connected LISTEN client (bounded by `timeoutMs`); ended again when the connect fails. */
async function connectListenClient(
  config: pg.ClientConfig,
  timeoutMs: number | undefined,
): Promise<pg.Client> {
  const client = new pg.Client({ ...config, keepAlive: true })
  client.on('error', () => {})
  await deadline(client.connect(), timeoutMs, 'the LISTEN connection').catch(async (err) => {
    await client.end().catch(() => {})
    throw err
  })
  return client
}

/** LISTENs on `channel` with a dedicated, reconnecting client, probed through the pool. */
function listenOnChannel(
  channel: string,
  handlers: WakeHandlers,
  checked: CheckedPgBackendOptions,
  pools: BackendPool,
): Promise<WakeSubscription> {
  const { timeoutMs, listenUrl, probeMs } = checked
  return listenWithReconnect(() => connectListenClient(pools.clientConfig(), timeoutMs), channel, handlers, {
    timeoutMs: probeMs,
    async send(payload) {
      await deadline(
        pools.pool().query({
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
  })
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
  const checked = checkPgBackendOptions(options)
  const { timeoutMs, prepared } = checked
  const pools = backendPool(options, checked)
  return createPostgresBackend({
    name: SOURCE,
    query(text, params, name) {
      const config: pg.QueryConfig & { query_timeout?: number } = { text, values: params as unknown[] }
      if (prepared && name) config.name = name
      if (timeoutMs !== undefined) config.query_timeout = timeoutMs
      return deadline(
        pools
          .pool()
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
        pools.pool().query({
          text: timeoutMs ? `SET LOCAL statement_timeout = ${Math.ceil(timeoutMs * 4)};\n${script}` : script,
          ...(timeoutMs ? { query_timeout: timeoutMs * 4 } : {}),
        } as pg.QueryConfig),
        timeoutMs && timeoutMs * 4,
        'migrate',
      )
    },
    listen: (channel, handlers) => listenOnChannel(channel, handlers, checked, pools),
    replicate: (command, handlers) => replicateWithPg(pools.clientConfig(), command, handlers, timeoutMs),
    close: () => pools.close(),
  })
}
