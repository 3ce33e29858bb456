import { formatValue, type PostgresPublishStatement } from '@outboxkit/core/adapter'
import type { PgSession } from 'drizzle-orm/pg-core'

/** The session of a Drizzle PostgreSQL transaction (`tx._.session`). */
export type DrizzleSession = PgSession<any, any, any>

/** Result rows of the publish statement, as plain objects. */
export type Rows = readonly Record<string, unknown>[]

/** How the adapter talks to one Drizzle PostgreSQL driver. */
export interface DrizzleDriver {
  /** The driver as users know it, e.g. `'node-postgres'`. */
  readonly name: string
  /**
   * Why `session` cannot take a write now (its transaction ended or failed), or `undefined` when
   * its transaction is open as far as the driver can tell. Synchronous and without I/O.
   */
  whyNotOpen(session: DrizzleSession): string | undefined
  /**
   * For drivers with no such state: `execute` sends core's `POSTGRES_TRANSACTION_MARKER` right
   * before the statement and needs core's guarded statement, which writes nothing unless the
   * marker's transaction is still open.
   */
  readonly guarded?: boolean
  /** Runs the statement on the session's connection in one round trip and returns its rows. */
  execute(session: DrizzleSession, statement: PostgresPublishStatement): Promise<Rows>
}

/**
 * Runs the statement through Drizzle's own query path on the session (the same one
 * `tx.execute(sql)` takes: the driver's raw query on the transaction's connection, with Drizzle's
 * logger), with the statement text and positional values exactly as given. `name` makes it a
 * prepared query, as Drizzle's `.prepare(name)` does.
 */
export async function executeThroughDrizzle(
  session: DrizzleSession,
  statement: PostgresPublishStatement,
  name?: string,
): Promise<Rows> {
  const prepared = session.prepareQuery(
    { sql: statement.text, params: statement.values },
    undefined,
    name,
    false,
  )
  return resultRows(await prepared.execute())
}

/** node-postgres and PGlite return `{ rows }`, postgres.js an array of rows. */
export function resultRows(result: unknown): Rows {
  if (Array.isArray(result)) return result
  const rows = (result as { rows?: unknown } | null | undefined)?.rows
  if (Array.isArray(rows)) return rows
  throw new Error(`the Drizzle driver returned ${formatValue(result)} where rows were expected`)
}
