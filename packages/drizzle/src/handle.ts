import type { OutboxDialect } from '@outboxkit/core'
import { formatValue } from '@outboxkit/core/adapter'
import { is } from 'drizzle-orm'
import { MySqlDatabase, MySqlTransaction } from 'drizzle-orm/mysql-core'
import { PgDatabase, PgTransaction } from 'drizzle-orm/pg-core'
import { BaseSQLiteDatabase, SQLiteTransaction } from 'drizzle-orm/sqlite-core'
import { entityKindOf } from './entity-kind.js'
import { notInTransaction } from './refusal.js'

export type { OutboxDialect }

/**
 * The dialect of `handle` when it is a Drizzle transaction (of any driver), by Drizzle's own brand
 * checks: `is(handle, PgTransaction)`, `is(handle, MySqlTransaction)`, `is(handle, SQLiteTransaction)`.
 * `undefined` for anything else, the root `db` included. These checks read the class's entity kind
 * (a `Symbol.for` key), so they hold across duplicated installs of drizzle-orm.
 */
export function transactionDialect(handle: unknown): OutboxDialect | undefined {
  if (is(handle, PgTransaction)) return 'postgres'
  if (is(handle, MySqlTransaction)) return 'mysql'
  if (is(handle, SQLiteTransaction)) return 'sqlite'
  return undefined
}

/** The dialect of a root Drizzle database (`PgDatabase`, `MySqlDatabase`, `BaseSQLiteDatabase`). */
function databaseDialect(handle: unknown): OutboxDialect | undefined {
  if (is(handle, PgDatabase)) return 'postgres'
  if (is(handle, MySqlDatabase)) return 'mysql'
  if (is(handle, BaseSQLiteDatabase)) return 'sqlite'
  return undefined
}

/** The drivers each dialect supports, for refusal messages. */
export const SUPPORTED_DRIVERS =
  'drizzle-orm/node-postgres, postgres-js and pglite (PostgreSQL), drizzle-orm/mysql2 (MySQL, MariaDB) and drizzle-orm/better-sqlite3 (SQLite)'

/**
 * The `NOT_IN_TRANSACTION` error for a MySQL or SQLite Drizzle transaction of a driver the adapter
 * cannot check (sqlite-proxy, libsql, mysql-proxy, PlanetScale, ...): nothing tells whether its
 * transaction is still open, nor runs the statement synchronously where the dialect needs it.
 */
export function unsupportedDriver(handle: unknown, style: 'async' | 'sync' = 'async'): Error {
  return notInTransaction(
    `a Drizzle ${entityKindOf(handle) ?? 'transaction'} (not a PostgreSQL transaction, nor a transaction of a MySQL or SQLite driver @outboxkit/drizzle supports: drizzle-orm/mysql2, drizzle-orm/better-sqlite3)`,
    style,
  )
}

/**
 * The `NOT_IN_TRANSACTION` error for a handle that is no Drizzle transaction at all: a root
 * database (of any dialect), another Drizzle object, or something that is not Drizzle.
 */
export function notATransaction(handle: unknown): Error {
  if (transactionDialect(handle)) return unsupportedDriver(handle)
  const kind = entityKindOf(handle)
  switch (databaseDialect(handle)) {
    case 'postgres':
    case 'mysql':
      return notInTransaction(
        `the Drizzle database itself (${kind ?? 'database'}): it runs each query in autocommit on whichever connection is free, so the message would commit on its own`,
      )
    case 'sqlite':
      return notInTransaction(
        `the Drizzle database itself (${kind ?? 'database'}): outside db.transaction it runs each query in autocommit, so the message would commit on its own`,
        'sync',
      )
    default:
      return notInTransaction(
        kind
          ? `a Drizzle ${kind} (not a transaction; @outboxkit/drizzle supports the transactions of ${SUPPORTED_DRIVERS})`
          : `${formatValue(handle)}, which is not a Drizzle transaction`,
      )
  }
}
