import type { OutboxBackend } from '@outboxkit/core'
import { createPostgresBackend, snakeCaseRows } from '@outboxkit/core/adapter'
import postgres from 'postgres'
import {
  type PostgresJsBackendConnectionOptions,
  type PostgresJsBackendOptions,
  resolveBackendArgs,
} from './backend-options.js'
import { withDeadline } from './deadline.js'
import { listenOn } from './listener.js'
import { replicateWithPostgresJs } from './replication.js'
import { runStatement } from './statement.js'
import { ADAPTER } from './transaction.js'

export type { PostgresJsBackendConnectionOptions, PostgresJsBackendOptions } from './backend-options.js'

/**
 * The relay backend for postgres.js.
 *
 * - `postgresJsBackend(sql, options?)`: on your `sql` (the root instance of `postgres(...)`). It
 *   stays yours: `relay.stop()` (`close()`) never ends it, it only stops the relay's LISTEN.
 * - `postgresJsBackend({ url, commandTimeoutMs, ...postgresOptions })`: outboxkit creates the `sql`
 *   on first use, owns it, and ends it in `close()`. With `commandTimeoutMs` and no
 *   `connect_timeout` of yours, connecting is bounded by `commandTimeoutMs` too. It uses
 *   `prepare: false` unless you pass `prepare` (so it works through a transaction-mode pooler;
 *   `prepare: true` on a direct connection saves a round trip per statement).
 *
 * Claims and settles run in autocommit on the pool (one statement each), as prepared statements
 * when the `sql` prepares (postgres.js' default, `prepare: true`) and unnamed with `prepare: false`;
 * `migrate` runs its script as one multi-statement query (one implicit transaction) with NOTICEs
 * silenced; LISTEN uses postgres.js' `sql.listen`, which reconnects by itself. With
 * `transport: 'wal'` (docs/wal.md) the relay reads the outbox's replication slot on one
 * `replication=database` connection of its own, opened with the options of `listen` when given
 * (a direct connection), else of `sql`.
 *
 * Behind PgBouncer in transaction mode (or Supavisor, RDS Proxy), postgres.js' own docs require
 * `postgres(url, { prepare: false })`; outboxkit then sends nothing session-bound (no named
 * statement, no session `SET`, no startup parameter PgBouncer refuses). LISTEN cannot hear through
 * such a pooler: the relay finds out with a probe NOTIFY, says so once and polls; give it
 * `listen: postgres(DIRECT_URL)` for wake-ups.
 *
 * @example
 * ```ts
 * const sql = postgres(process.env.DATABASE_URL!)
 * const backend = postgresJsBackend(sql, { commandTimeoutMs: 5_000 })
 * await migrate(outbox, backend)
 * const relay = createRelay(outbox, { backend, handlers })
 * // Behind PgBouncer in transaction mode, wake-ups on a direct connection:
 * const pooled = postgres(process.env.POOLED_URL!, { prepare: false })
 * postgresJsBackend(pooled, { listen: postgres(process.env.DIRECT_URL!) })
 * ```
 * @throws OutboxError `INVALID_CONFIG` when `sql` is not the root sql of postgres(), or for
 * invalid options.
 */
export function postgresJsBackend(sql: postgres.Sql<any>, options?: PostgresJsBackendOptions): OutboxBackend
export function postgresJsBackend(options: PostgresJsBackendConnectionOptions): OutboxBackend
export function postgresJsBackend(
  sqlOrOptions: postgres.Sql<any> | PostgresJsBackendConnectionOptions,
  maybeOptions?: PostgresJsBackendOptions,
): OutboxBackend {
  const { userSql, ownedOptions, url, timeoutMs, probeMs, listenSql } = resolveBackendArgs(
    sqlOrOptions,
    maybeOptions,
  )
  let owned: postgres.Sql<any> | undefined
  const sql = (): postgres.Sql<any> => {
    if (userSql) return userSql
    if (!owned) owned = url === undefined ? postgres(ownedOptions) : postgres(url, ownedOptions)
    return owned
  }

  return createPostgresBackend({
    name: ADAPTER,
    async query(text, params) {
      const rows = await withDeadline(runStatement(sql(), text, params), timeoutMs, 'a relay statement')
      return snakeCaseRows(rows)
    },
    async exec(script) {
      // One simple-protocol query: PostgreSQL runs the statements in one implicit transaction.
      // SET LOCAL keeps "already exists, skipping" NOTICEs out of the user's console (postgres.js
      // logs NOTICEs unless onnotice is set) and lasts only for this script.
      // With commandTimeoutMs, SET LOCAL statement_timeout bounds it on the server too (a startup
      // parameter would be refused by PgBouncer).
      const bound =
        timeoutMs === undefined ? '' : `SET LOCAL statement_timeout = ${Math.ceil(timeoutMs * 4)};\n`
      const query = sql().unsafe(`SET LOCAL client_min_messages = warning;\n${bound}${script}`).simple()
      await withDeadline(query, timeoutMs === undefined ? undefined : timeoutMs * 4, 'migrate')
    },
    listen(channel, handlers) {
      return listenOn(listenSql ?? sql(), channel, handlers, timeoutMs, {
        timeoutMs: probeMs,
        async send(payload) {
          await withDeadline(
            runStatement(sql(), 'SELECT pg_notify($1, $2)', [channel, payload]),
            timeoutMs,
            'the LISTEN probe',
          )
        },
      })
    },
    // The WAL transport's slot is read on a replication connection of its own, made with the
    // options of the LISTEN sql when given (a direct connection), else of the backend's sql.
    replicate: (command, handlers) =>
      replicateWithPostgresJs(listenSql ?? sql(), command, handlers, timeoutMs),
    async close() {
      const s = owned
      owned = undefined
      // Waits for running statements, at most commandTimeoutMs (default 5 s), then closes the sockets.
      if (s) await s.end({ timeout: (timeoutMs ?? 5_000) / 1000 })
    },
  })
}
