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
const OWN_OPTIONS = ['commandTimeoutMs'] as const satisfies readonly (keyof PostgresJsBackendOptions)[]
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

/**
 * The relay backend for postgres.js.
 *
 * - `postgresJsBackend(sql, options?)`: on your `sql` (the root instance of `postgres(...)`). It
 *   stays yours: `relay.stop()` (`close()`) never ends it, it only stops the relay's LISTEN.
 * - `postgresJsBackend({ url, commandTimeoutMs, ...postgresOptions })`: outboxkit creates the `sql`
 *   on first use, owns it, and ends it in `close()`. With `commandTimeoutMs` and no
 *   `connect_timeout` of yours, connecting is bounded by `commandTimeoutMs` too.
 *
 * Claims and settles run in autocommit on the pool as prepared statements (one round trip each);
 * `migrate` runs its script as one multi-statement query (one implicit transaction) with NOTICEs
 * silenced; LISTEN uses postgres.js' `sql.listen`, which reconnects by itself.
 *
 * @example
 * ```ts
 * const sql = postgres(process.env.DATABASE_URL!)
 * const backend = postgresJsBackend(sql, { commandTimeoutMs: 5_000 })
 * await migrate(outbox, backend)
 * const relay = createRelay(outbox, { backend, handlers })
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
    const { url: u, commandTimeoutMs, ...rest } = sqlOrOptions
    if (u !== undefined && typeof u !== 'string') throw config(`url must be a string, got ${formatValue(u)}.`)
    timeoutMs = positiveMs('commandTimeoutMs', commandTimeoutMs, undefined, ADAPTER)
    url = u
    ownedOptions = {
      onnotice: () => {},
      ...rest,
      ...(timeoutMs !== undefined && rest.connect_timeout === undefined
        ? { connect_timeout: timeoutMs / 1000 }
        : {}),
    }
  } else {
    checkSql(sqlOrOptions)
  }

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
      const query = sql().unsafe(`SET LOCAL client_min_messages = warning;\n${script}`).simple()
      await withDeadline(query, timeoutMs === undefined ? undefined : timeoutMs * 4, 'migrate')
    },
    listen(channel, handlers) {
      return listenOn(sql(), channel, handlers, timeoutMs)
    },
    async close() {
      const s = owned
      owned = undefined
      // Waits for running statements, at most commandTimeoutMs (default 5 s), then closes the sockets.
      if (s) await s.end({ timeout: (timeoutMs ?? 5_000) / 1000 })
    },
  })
}
