import { type OutboxBackend, OutboxError } from '@outboxkit/core'
import {
  assertKnownOptions,
  createPostgresBackend,
  formatValue,
  positiveMs,
  snakeCaseRows,
} from '@outboxkit/core/adapter'
import postgres from 'postgres'
import { withDeadline } from './deadline.js'
import { listenOn } from './listener.js'
import { runStatement } from './statement.js'
import { ADAPTER } from './transaction.js'

/** Options of {@link postgresJsBackend} on your own `sql`. */
export interface PostgresJsBackendOptions {
  /**
   * Bound on every relay statement, in ms. A frozen or unreachable server then fails the claim or
   * settle with `OutboxError('TIMEOUT')` within this bound (the relay backs off and retries), and
   * the statement is cancelled so it does not apply later. postgres.js has no per-query timeout of
   * its own. Also bounds the first LISTEN; `migrate` gets four times as long. Recommended.
   * Default: none (a hung server then hangs the relay's statements).
   */
  commandTimeoutMs?: number
  /**
   * A `sql` (root instance of `postgres(...)`) used only for the relay's LISTEN, e.g. a direct
   * connection to PostgreSQL while the backend's own `sql` goes through a transaction-mode pooler
   * (PgBouncer, Supavisor, RDS Proxy), where LISTEN cannot work. Claims, settles and the probe
   * NOTIFY keep going through the backend's `sql`. It stays yours: outboxkit never ends it.
   * Default: the backend's own `sql`.
   */
  listen?: postgres.Sql<any>
  /**
   * After each LISTEN, the backend sends a probe NOTIFY through its `sql` and waits this long for
   * the listening connection to hear it. When it does not (a transaction-mode pooler hands the
   * notification to whichever client holds the server connection), the relay is told once that
   * LISTEN is unavailable (its `listenUnavailable` event and one warn log line) and keeps
   * delivering by polling. In ms. Default 2000.
   */
  listenProbeTimeoutMs?: number
}

/**
 * {@link postgresJsBackend} on a `sql` that outboxkit creates from `url` and postgres.js options,
 * owns, and ends in `close()` (and so in `relay.stop()`).
 */
export interface PostgresJsBackendConnectionOptions
  extends PostgresJsBackendOptions,
    postgres.Options<Record<string, postgres.PostgresType>> {
  /** Connection URL, e.g. `process.env.DATABASE_URL`. `undefined`: postgres.js reads the PG* variables. */
  url: string | undefined
}

function config(message: string): OutboxError {
  return new OutboxError('INVALID_CONFIG', message, { source: ADAPTER })
}

/** The options of outboxkit itself, in both forms of {@link postgresJsBackend}. */
const OWN_OPTIONS = [
  'commandTimeoutMs',
  'listen',
  'listenProbeTimeoutMs',
] as const satisfies readonly (keyof PostgresJsBackendOptions)[]
type PostgresOptions = postgres.Options<Record<string, postgres.PostgresType>>
/** Every option of postgres() (postgres.js 3), which {@link postgresJsBackend} passes on to the sql it creates. */
const POSTGRES_OPTIONS = [
  'host',
  'port',
  'path',
  'database',
  'user',
  'ssl',
  'max',
  'idle_timeout',
  'connect_timeout',
  'types',
  'prepare',
  'onnotice',
  'onparameter',
  'debug',
  'transform',
  'connection',
  'target_session_attrs',
  'fetch_types',
  'publications',
  'onclose',
  'backoff',
  'max_lifetime',
  'keep_alive',
  'pass',
  'password',
  'db',
  'username',
  'hostname',
  'no_prepare',
  'timeout',
] as const satisfies readonly (keyof PostgresOptions)[]
// Fails to compile when postgres.js adds an option that the list above lacks.
const optionsListed: Exclude<keyof PostgresOptions, (typeof POSTGRES_OPTIONS)[number]> extends never
  ? true
  : never = true
void optionsListed
const CONNECTION_FORM: readonly string[] = ['url', ...OWN_OPTIONS, ...POSTGRES_OPTIONS]

type SqlShape = {
  unsafe?: unknown
  listen?: unknown
  begin?: unknown
  savepoint?: unknown
  release?: unknown
}

function checkSql(sql: unknown): postgres.Sql<any> {
  const s = sql as SqlShape
  if (typeof sql === 'function' && typeof s.unsafe === 'function') {
    if (typeof s.savepoint === 'function') {
      throw config(
        'postgresJsBackend needs the root sql of postgres(), got a transaction sql: the relay would run its statements inside your transaction, and they must commit on their own.',
      )
    }
    if (typeof s.release === 'function') {
      throw config(
        'postgresJsBackend needs the root sql of postgres(), got a reserved connection (sql.reserve()): pass the sql it was reserved from.',
      )
    }
    if (typeof s.begin === 'function' && typeof s.listen === 'function') return sql as postgres.Sql<any>
  }
  throw config(
    `postgresJsBackend expects the sql of postgres(...) or { url, ...options }, got ${formatValue(sql)}.`,
  )
}

function checkListenSql(listen: unknown): postgres.Sql<any> {
  try {
    return checkSql(listen)
  } catch {
    throw config(
      `listen must be the root sql of postgres(...) (a direct connection used only for LISTEN), got ${formatValue(listen)}.`,
    )
  }
}

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
 * silenced; LISTEN uses postgres.js' `sql.listen`, which reconnects by itself.
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
  let userSql: postgres.Sql<any> | undefined
  let ownedOptions: postgres.Options<Record<string, postgres.PostgresType>> | undefined
  let url: string | undefined
  let timeoutMs: number | undefined
  let own: PostgresJsBackendOptions | undefined
  if (typeof sqlOrOptions === 'function') {
    userSql = checkSql(sqlOrOptions)
    if (maybeOptions !== undefined && (maybeOptions === null || typeof maybeOptions !== 'object')) {
      throw config(`postgresJsBackend options must be an object, got ${formatValue(maybeOptions)}.`)
    }
    assertKnownOptions(maybeOptions, OWN_OPTIONS, {
      source: ADAPTER,
      what: 'postgresJsBackend(sql, options)',
    })
    timeoutMs = positiveMs('commandTimeoutMs', maybeOptions?.commandTimeoutMs, undefined, ADAPTER)
    own = maybeOptions
  } else if (sqlOrOptions && typeof sqlOrOptions === 'object' && !Array.isArray(sqlOrOptions)) {
    if (!('url' in sqlOrOptions)) {
      throw config(
        'postgresJsBackend expects the sql of postgres(...), or { url, ...options } (url may be undefined to use the PG* environment variables).',
      )
    }
    assertKnownOptions(sqlOrOptions, CONNECTION_FORM, {
      source: ADAPTER,
      what: 'postgresJsBackend({ url })',
      valid: `url, ${OWN_OPTIONS.join(', ')} and the options of postgres() (${POSTGRES_OPTIONS.join(', ')})`,
    })
    const { url: u, commandTimeoutMs, listen, listenProbeTimeoutMs, ...rest } = sqlOrOptions
    if (u !== undefined && typeof u !== 'string') throw config(`url must be a string, got ${formatValue(u)}.`)
    timeoutMs = positiveMs('commandTimeoutMs', commandTimeoutMs, undefined, ADAPTER)
    own = { listen, listenProbeTimeoutMs }
    url = u
    ownedOptions = {
      onnotice: () => {},
      // Nothing session-bound unless asked for: works through a transaction-mode pooler.
      prepare: false,
      ...rest,
      ...(timeoutMs !== undefined && rest.connect_timeout === undefined
        ? { connect_timeout: timeoutMs / 1000 }
        : {}),
    }
  } else {
    checkSql(sqlOrOptions)
  }
  const probeMs = positiveMs('listenProbeTimeoutMs', own?.listenProbeTimeoutMs, 2_000, ADAPTER)
  const listenSql = own?.listen === undefined ? undefined : checkListenSql(own.listen)

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
    async close() {
      const s = owned
      owned = undefined
      // Waits for running statements, at most commandTimeoutMs (default 5 s), then closes the sockets.
      if (s) await s.end({ timeout: (timeoutMs ?? 5_000) / 1000 })
    },
  })
}
