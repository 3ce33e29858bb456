import type { OutboxBackend } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import type { DatabaseTarget } from './database-url.js'
import { importOptional } from './optional-package.js'

/** Connection bound: a server that does not answer fails the command within this. */
export const CONNECT_TIMEOUT_MS = 10_000
/** Statement bound: generous, since purge and discard may delete many rows. */
export const COMMAND_TIMEOUT_MS = 120_000
/** How long a SQLite command waits for the database's write lock (another process writing). */
export const SQLITE_LOCK_TIMEOUT_MS = 10_000

/** How the CLI opens a backend. */
export interface OpenBackendOptions {
  /**
   * SQLite only: create the database file when it does not exist (`migrate`). Every other command
   * refuses a missing file instead of leaving an empty one behind a mistyped path.
   */
  readonly createFile: boolean
}

/** The packages each optional database needs, as the install hint names them. */
export const OPTIONAL_PACKAGES = {
  mysql: ['@outboxkit/mysql', 'mysql2'],
  sqlite: ['@outboxkit/sqlite', 'better-sqlite3'],
} as const

/**
 * Opens the backend `target` names, with one connection and the CLI's bounds. PostgreSQL uses
 * `@outboxkit/pg` (a dependency of the CLI); MySQL/MariaDB and SQLite load their optional peer
 * packages only now, so a PostgreSQL user needs neither.
 *
 * SQLite: the CLI never switches the file's journal mode (`wal: false`): it is one short-lived
 * connection, and `PRAGMA journal_mode = WAL` would persist in the user's database.
 *
 * @throws MissingPackageError when the optional packages of the target's database are not installed.
 */
export async function openBackend(
  target: DatabaseTarget,
  options: OpenBackendOptions,
): Promise<OutboxBackend> {
  switch (target.dialect) {
    case 'postgres':
      return pgBackend({
        connectionString: target.connectionString,
        max: 1,
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
        commandTimeoutMs: COMMAND_TIMEOUT_MS,
        preparedStatements: false,
      })
    case 'mysql': {
      const { mysqlBackend } = await importOptional(
        () => import('@outboxkit/mysql'),
        'MySQL/MariaDB',
        OPTIONAL_PACKAGES.mysql,
      )
      return mysqlBackend({
        uri: target.uri,
        connectionLimit: 1,
        connectTimeout: CONNECT_TIMEOUT_MS,
        commandTimeoutMs: COMMAND_TIMEOUT_MS,
      })
    }
    case 'sqlite': {
      const { sqliteBackend } = await importOptional(
        () => import('@outboxkit/sqlite'),
        'SQLite',
        OPTIONAL_PACKAGES.sqlite,
      )
      return sqliteBackend({
        filename: target.filename,
        fileMustExist: !options.createFile,
        busyTimeoutMs: SQLITE_LOCK_TIMEOUT_MS,
        wal: false,
      })
    }
  }
}
