import { type OutboxBackend, OutboxError } from '@outboxkit/core'
import {
  assertKnownOptions,
  createSqliteBackend,
  formatValue,
  type SqliteExecutor,
} from '@outboxkit/core/adapter'
import Database from 'better-sqlite3'
import { isSqliteDatabase, prepared, type SqliteDatabase } from './database.js'

const ADAPTER = 'sqlite'
const DEFAULT_BUSY_TIMEOUT_MS = 5_000

/** Options of {@link sqliteBackend} when the backend opens its own connection. */
export interface SqliteBackendOptions extends Omit<Database.Options, 'readonly' | 'timeout'> {
  /** The database file (the one your producers write to). Not `':memory:'`: that is private to a connection. */
  filename: string
  /**
   * How long a claim or settle waits for SQLite's write lock, in ms, without blocking the event
   * loop; also the connection's `busy_timeout`.
   *
   * @defaultValue `5_000`
   */
  busyTimeoutMs?: number
  /**
   * Switch the database to WAL (`PRAGMA journal_mode = WAL`, which persists in the file) when the
   * connection opens, so readers and the writer do not block each other.
   *
   * @defaultValue `true`
   */
  wal?: boolean
}

/** The options of outboxkit itself in {@link sqliteBackend}'s options form. */
const OWN_OPTIONS = [
  'filename',
  'busyTimeoutMs',
  'wal',
] as const satisfies readonly (keyof SqliteBackendOptions)[]
/**
 * The options of better-sqlite3's `Database` that {@link sqliteBackend} passes on; `readonly` is
 * accepted here only to be refused with its own message, `timeout` is `busyTimeoutMs`.
 */
const DATABASE_OPTIONS = [
  'fileMustExist',
  'verbose',
  'nativeBinding',
  'readonly',
] as const satisfies readonly (keyof Database.Options)[]
// Fails to compile when better-sqlite3 adds an option that the list above lacks.
const databaseOptionsListed: Exclude<
  keyof Database.Options,
  (typeof DATABASE_OPTIONS)[number] | 'timeout'
> extends never
  ? true
  : never = true
void databaseOptionsListed
const OPTIONS_FORM: readonly string[] = [...OWN_OPTIONS, ...DATABASE_OPTIONS]

function invalid(what: string): OutboxError {
  return new OutboxError('INVALID_CONFIG', what, { source: ADAPTER })
}

/** Runs `fn` in `BEGIN IMMEDIATE ... COMMIT` on `db`, failing at once (SQLITE_BUSY) when the write lock is taken. */
function immediate<T>(db: SqliteDatabase, fn: () => T): T {
  const busyTimeout = Number(prepared(db, 'PRAGMA busy_timeout').pluck().get())
  // busy_timeout 0 for the BEGIN only: the backend retries without blocking the event loop,
  // which a producer of this process may need to commit the transaction that holds the lock.
  if (busyTimeout !== 0) db.exec('PRAGMA busy_timeout = 0')
  try {
    prepared(db, 'BEGIN IMMEDIATE').run()
  } finally {
    if (busyTimeout !== 0) db.exec(`PRAGMA busy_timeout = ${busyTimeout}`)
  }
  try {
    const result = fn()
    prepared(db, 'COMMIT').run()
    return result
  } catch (err) {
    if (db.inTransaction) prepared(db, 'ROLLBACK').run()
    throw err
  }
}

function executor(connection: () => SqliteDatabase, close: () => Promise<void>, lockTimeoutMs: () => number) {
  const exec: SqliteExecutor = {
    name: ADAPTER,
    all: (sql, params) => prepared(connection(), sql).all(params as unknown[]),
    run: (sql, params) => prepared(connection(), sql).run(params as unknown[]),
    exec: (script) => void connection().exec(script),
    inTransaction: () => connection().inTransaction,
    immediate: (fn) => immediate(connection(), fn),
    lockTimeoutMs,
    close,
  }
  return exec
}

/**
 * The relay backend for SQLite through better-sqlite3.
 *
 * - `sqliteBackend(db)`: uses your `Database`, and leaves it open on `relay.stop()`. Producers and
 *   the relay can share it: a claim never runs inside a transaction you keep open across an
 *   `await` (it returns nothing, the next poll or wake claims), and other writes wait for it to end.
 * - `sqliteBackend({ filename, ...options })`: opens (lazily) and owns its own connection to the
 *   file, in WAL mode with a busy timeout, and closes it on `relay.stop()`.
 *
 * SQLite has one writer at a time: each claim is one statement in a short `BEGIN IMMEDIATE`, so
 * claims of any number of relays and processes are disjoint. Waiting for the write lock never
 * blocks the event loop. Relays in the producers' process are woken right after each commit (the
 * in-process wake); relays in other processes poll (`pollIntervalMs`). Use WAL
 * (`db.pragma('journal_mode = WAL')`) and a busy timeout on every connection to the file.
 *
 * @example
 * ```ts
 * const db = new Database('app.db')
 * db.pragma('journal_mode = WAL')
 * const backend = sqliteBackend(db)
 * await migrate(outbox, backend)
 * ```
 * @throws OutboxError `INVALID_CONFIG` for anything but a better-sqlite3 Database or valid options
 * (an unknown option is named, with the closest valid one); for a second argument (options go in
 * the options form, the Database form takes none: set its busy timeout on the Database).
 */
export function sqliteBackend(
  source: SqliteDatabase | SqliteBackendOptions,
  ...unexpected: []
): OutboxBackend {
  if ((unexpected as unknown[])[0] !== undefined) {
    throw invalid(
      `sqliteBackend takes one argument, got a second: ${formatValue((unexpected as unknown[])[0])}. Pass sqliteBackend(db) (set the busy timeout on your Database: db.pragma('busy_timeout = 5000')), or sqliteBackend({ filename, ...options }).`,
    )
  }
  if (isSqliteDatabase(source)) {
    if (!source.open) throw invalid('sqliteBackend got a closed Database. Pass an open one.')
    const db = source
    return createSqliteBackend(
      executor(
        () => db,
        async () => {},
        () => Number(prepared(db, 'PRAGMA busy_timeout').pluck().get()),
      ),
    )
  }
  if (
    !source ||
    typeof source !== 'object' ||
    typeof (source as { filename?: unknown }).filename !== 'string'
  ) {
    throw invalid(
      `sqliteBackend expects a better-sqlite3 Database or { filename, ...options }, got ${formatValue(source)}.`,
    )
  }
  assertKnownOptions(source, OPTIONS_FORM, { source: ADAPTER, what: 'sqliteBackend({ filename })' })
  const { filename, busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS, wal = true, ...options } = source
  const name = filename.trim()
  if (name === '' || name === ':memory:' || /^file::memory:/i.test(name) || /[?&]mode=memory\b/i.test(name)) {
    throw invalid(
      `sqliteBackend({ filename }) needs a database file, got ${JSON.stringify(filename)}: an in-memory database is private to its connection, so the relay would not see your messages. Pass your Database instance instead: sqliteBackend(db).`,
    )
  }
  if (typeof busyTimeoutMs !== 'number' || !Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw invalid(
      `busyTimeoutMs must be an integer number of milliseconds >= 0, got ${formatValue(busyTimeoutMs)}.`,
    )
  }
  if (typeof wal !== 'boolean') throw invalid(`wal must be true or false, got ${formatValue(wal)}.`)
  if ((source as Database.Options).readonly) {
    throw invalid('sqliteBackend cannot use a readonly connection: the relay writes claims and outcomes.')
  }
  let db: SqliteDatabase | undefined
  const connection = () => {
    if (db?.open) return db
    const opened = new Database(filename, { ...options, timeout: busyTimeoutMs })
    try {
      if (wal) opened.pragma('journal_mode = WAL')
    } catch (err) {
      opened.close()
      throw err
    }
    db = opened
    return opened
  }
  return createSqliteBackend(
    executor(
      connection,
      async () => {
        const open = db
        db = undefined
        if (open?.open) open.close()
      },
      () => busyTimeoutMs,
    ),
  )
}
