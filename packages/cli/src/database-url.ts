import { resolve as resolvePath } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { OutboxDialect } from '@outboxkit/core'
import { UsageError } from './usage.js'

export type { OutboxDialect }

/** Every {@link OutboxDialect}, in the order of the help. */
export const DIALECTS: readonly OutboxDialect[] = ['postgres', 'mysql', 'sqlite']

/** What `DATABASE_URL` names: the backend to open, and how to reach it. */
export type DatabaseTarget =
  /** PostgreSQL: the connection string as given (`postgres://` or `postgresql://`). */
  | { readonly dialect: 'postgres'; readonly connectionString: string }
  /** MySQL or MariaDB: a `mysql://` URI for mysql2 (`mariadb://` rewritten to `mysql://`). */
  | { readonly dialect: 'mysql'; readonly uri: string }
  /** SQLite: the database file, absolute (a relative path is resolved against the current directory). */
  | { readonly dialect: 'sqlite'; readonly filename: string }

/** The schemes `DATABASE_URL` accepts, as the help and the errors list them. */
export const ACCEPTED_SCHEMES =
  'postgres:// or postgresql:// (PostgreSQL), mysql:// or mariadb:// (MySQL, MariaDB), sqlite:<path>, sqlite:///abs/path or file:<path> (SQLite)'

const SCHEME = /^([a-z][a-z0-9+.-]*):/i

const DIALECT_OF_SCHEME: Readonly<Record<string, OutboxDialect>> = {
  postgres: 'postgres',
  postgresql: 'postgres',
  mysql: 'mysql',
  mariadb: 'mysql',
  sqlite: 'sqlite',
  file: 'sqlite',
}

/**
 * The {@link OutboxDialect} of `url`, from its scheme alone. Never echoes the URL (it may hold a password).
 *
 * @throws UsageError when the scheme is missing or not one of {@link ACCEPTED_SCHEMES}.
 */
export function dialectOfUrl(url: string, command: string): OutboxDialect {
  const scheme = SCHEME.exec(url)?.[1]?.toLowerCase()
  if (scheme === undefined) {
    throw new UsageError(
      `DATABASE_URL has no scheme, so the CLI cannot tell which database it is: write it as ${ACCEPTED_SCHEMES}.`,
      command,
    )
  }
  const dialect = DIALECT_OF_SCHEME[scheme]
  if (dialect === undefined) {
    throw new UsageError(
      `DATABASE_URL has the scheme ${JSON.stringify(`${scheme}:`)}, which the CLI does not know. Accepted: ${ACCEPTED_SCHEMES}.`,
      command,
    )
  }
  return dialect
}

/** Percent-decodes a path of a `//` URL form; a malformed escape is a usage error. */
function decodePath(path: string, command: string): string {
  try {
    return decodeURIComponent(path)
  } catch {
    throw new UsageError('DATABASE_URL has a malformed %-escape in its SQLite path.', command)
  }
}

/** The SQLite file `url` names (`sqlite:` or `file:`), absolute. */
function sqliteFilename(url: string, command: string): string {
  const scheme = SCHEME.exec(url)![1]!.toLowerCase()
  // Query parameters (e.g. Prisma's `file:./dev.db?connection_limit=1`) are not SQLite's: ignored.
  const withoutQuery = url.slice(scheme.length + 1).replace(/[?#].*$/s, '')
  let path: string
  if (withoutQuery.startsWith('//')) {
    if (scheme === 'file') {
      try {
        path = fileURLToPath(`file:${withoutQuery}`)
      } catch {
        throw new UsageError(
          'DATABASE_URL is a file:// URL with a host: write file:///absolute/path/app.db or file:./relative/app.db.',
          command,
        )
      }
    } else if (withoutQuery.startsWith('///')) {
      path = decodePath(withoutQuery.slice(2), command)
    } else {
      throw new UsageError(
        'DATABASE_URL is sqlite://<something>: write sqlite:relative/app.db, sqlite:./app.db or sqlite:///absolute/path/app.db.',
        command,
      )
    }
  } else {
    path = withoutQuery
  }
  if (path.trim() === '') {
    throw new UsageError(
      'DATABASE_URL names no SQLite file: write sqlite:./app.db or sqlite:///absolute/path/app.db.',
      command,
    )
  }
  if (path === ':memory:' || /[?&]mode=memory\b/i.test(url)) {
    throw new UsageError(
      'DATABASE_URL names an in-memory SQLite database, which would be empty and private to the CLI: name the database file.',
      command,
    )
  }
  return resolvePath(path)
}

/**
 * Reads `DATABASE_URL`: which backend, and how to reach it.
 *
 * - `postgres://...`, `postgresql://...`: PostgreSQL, the connection string as given.
 * - `mysql://...`: MySQL 8+ or MariaDB 10.6+; `mariadb://...` is the same, rewritten to `mysql://` for mysql2.
 * - `sqlite:<path>` (`sqlite:app.db`, `sqlite:./data/app.db`), `sqlite:///abs/path/app.db`,
 *   `file:<path>` (`file:./app.db`, as Prisma writes it) and `file:///abs/path/app.db`: SQLite.
 *   A relative path is relative to the current directory; query parameters are ignored.
 *
 * @throws UsageError for an unknown scheme, a SQLite URL naming no file, or an in-memory database.
 */
export function parseDatabaseUrl(url: string, command: string): DatabaseTarget {
  const dialect = dialectOfUrl(url, command)
  if (dialect === 'postgres') return { dialect, connectionString: url }
  if (dialect === 'mysql') return { dialect, uri: url.replace(/^mariadb:/i, 'mysql:') }
  return { dialect, filename: sqliteFilename(url, command) }
}
