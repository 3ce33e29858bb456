import { OutboxError } from '@outboxkit/core'
import { assertKnownOptions, formatValue, positiveMs } from '@outboxkit/core/adapter'
import type postgres from 'postgres'
import { ADAPTER } from './transaction.js'

/** Options of {@link postgresJsBackend} on your own `sql`. */
export interface PostgresJsBackendOptions {
  /**
   * Bound on every relay statement, in ms. A frozen or unreachable server then fails the claim or
   * settle with `OutboxError('TIMEOUT')` within this bound (the relay backs off and retries), and
   * the statement is cancelled so it does not apply later. postgres.js has no per-query timeout of
   * its own. Also bounds the first LISTEN; `migrate` gets four times as long. Recommended.
   * Default: none (a hung server then hangs the relay's statements).
   *
   * @defaultValue none: no bound
   */
  commandTimeoutMs?: number
  /**
   * A `sql` (root instance of `postgres(...)`) used only for the relay's LISTEN, e.g. a direct
   * connection to PostgreSQL while the backend's own `sql` goes through a transaction-mode pooler
   * (PgBouncer, Supavisor, RDS Proxy), where LISTEN cannot work. With `transport: 'wal'` the
   * replication connection that reads the slot is opened with its connection options too (a
   * pooler cannot carry the replication protocol). Claims, settles and the probe NOTIFY keep
   * going through the backend's `sql`. It stays yours: outboxkit never ends it.
   * Default: the backend's own `sql`.
   *
   * @defaultValue none: the backend's own `sql`
   */
  listen?: postgres.Sql<any>
  /**
   * After each LISTEN, the backend sends a probe NOTIFY through its `sql` and waits this long for
   * the listening connection to hear it. When it does not (a transaction-mode pooler hands the
   * notification to whichever client holds the server connection), the relay is told once that
   * LISTEN is unavailable (its `listenUnavailable` event and one warn log line) and keeps
   * delivering by polling. In ms.
   *
   * @defaultValue `2_000`
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

/** `sql` as the root sql of postgres(); refuses a transaction sql, a reserved connection, anything else. */
export function checkSql(sql: unknown): postgres.Sql<any> {
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

/** What {@link postgresJsBackend} runs on, from either of its forms, checked. */
export interface ResolvedBackendArgs {
  /** The caller's sql; undefined: outboxkit creates one from `url` and `ownedOptions`. */
  userSql?: postgres.Sql<any>
  ownedOptions?: PostgresOptions
  url?: string
  timeoutMs: number | undefined
  probeMs: number
  /** The sql of the `listen` option, if given. */
  listenSql: postgres.Sql<any> | undefined
}

function onUserSql(sql: postgres.Sql<any>, options: PostgresJsBackendOptions | undefined) {
  const userSql = checkSql(sql)
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw config(`postgresJsBackend options must be an object, got ${formatValue(options)}.`)
  }
  assertKnownOptions(options, OWN_OPTIONS, {
    source: ADAPTER,
    what: 'postgresJsBackend(sql, options)',
  })
  const timeoutMs = positiveMs('commandTimeoutMs', options?.commandTimeoutMs, undefined, ADAPTER)
  return { userSql, timeoutMs, own: options }
}

function onConnectionOptions(options: PostgresJsBackendConnectionOptions) {
  if (!('url' in options)) {
    throw config(
      'postgresJsBackend expects the sql of postgres(...), or { url, ...options } (url may be undefined to use the PG* environment variables).',
    )
  }
  assertKnownOptions(options, CONNECTION_FORM, {
    source: ADAPTER,
    what: 'postgresJsBackend({ url })',
    valid: `url, ${OWN_OPTIONS.join(', ')} and the options of postgres() (${POSTGRES_OPTIONS.join(', ')})`,
  })
  const { url, commandTimeoutMs, listen, listenProbeTimeoutMs, ...rest } = options
  if (url !== undefined && typeof url !== 'string')
    throw config(`url must be a string, got ${formatValue(url)}.`)
  const timeoutMs = positiveMs('commandTimeoutMs', commandTimeoutMs, undefined, ADAPTER)
  const ownedOptions: PostgresOptions = {
    onnotice: () => {},
    // Nothing session-bound unless asked for: works through a transaction-mode pooler.
    prepare: false,
    ...rest,
    ...(timeoutMs !== undefined && rest.connect_timeout === undefined
      ? { connect_timeout: timeoutMs / 1000 }
      : {}),
  }
  return { url, timeoutMs, ownedOptions, own: { listen, listenProbeTimeoutMs } as PostgresJsBackendOptions }
}

/**
 * Checks the arguments of either form of {@link postgresJsBackend}.
 * @throws OutboxError `INVALID_CONFIG` when `sql` is not the root sql of postgres(), or for
 * invalid options.
 */
export function resolveBackendArgs(
  sqlOrOptions: postgres.Sql<any> | PostgresJsBackendConnectionOptions,
  maybeOptions: PostgresJsBackendOptions | undefined,
): ResolvedBackendArgs {
  let form: Omit<ResolvedBackendArgs, 'probeMs' | 'listenSql'> & { own?: PostgresJsBackendOptions }
  if (typeof sqlOrOptions === 'function') form = onUserSql(sqlOrOptions, maybeOptions)
  else if (sqlOrOptions && typeof sqlOrOptions === 'object' && !Array.isArray(sqlOrOptions))
    form = onConnectionOptions(sqlOrOptions)
  else {
    checkSql(sqlOrOptions)
    form = { timeoutMs: undefined }
  }
  const { own, ...args } = form
  const probeMs = positiveMs('listenProbeTimeoutMs', own?.listenProbeTimeoutMs, 2_000, ADAPTER)
  const listenSql = own?.listen === undefined ? undefined : checkListenSql(own.listen)
  return { ...args, probeMs, listenSql }
}
