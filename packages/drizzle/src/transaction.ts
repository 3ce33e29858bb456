import { is } from 'drizzle-orm'
import { PgTransaction } from 'drizzle-orm/pg-core'
import type { DrizzleDriver, DrizzleSession } from './driver.js'
import { nodePostgresDriver } from './driver-node-postgres.js'
import { otherDriver } from './driver-other.js'
import { pgliteDriver } from './driver-pglite.js'
import { postgresJsDriver } from './driver-postgres-js.js'
import { hasEntityKind } from './entity-kind.js'
import { notATransaction } from './handle.js'
import { notInTransaction } from './refusal.js'

/**
 * A Drizzle PostgreSQL transaction: the `tx` of `db.transaction(async (tx) => ...)`, or of a nested
 * `tx.transaction(...)` (a savepoint), for any driver (`NodePgTransaction`, `PostgresJsTransaction`,
 * `PgliteTransaction`, ...).
 */
export type DrizzleTransaction = PgTransaction<any, any, any>

const drivers: readonly [sessionKind: string, driver: DrizzleDriver][] = [
  ['NodePgSession', nodePostgresDriver],
  ['PostgresJsSession', postgresJsDriver],
  ['PgliteSession', pgliteDriver],
]

/** The session a transaction runs its queries on (`tx._.session`, public in Drizzle). */
export function sessionOf(tx: DrizzleTransaction): DrizzleSession {
  return tx._.session
}

/** The driver of a transaction's session; drivers the adapter does not know get the guarded statement. */
export function driverOf(session: DrizzleSession): DrizzleDriver {
  for (const [kind, driver] of drivers) if (hasEntityKind(session, kind)) return driver
  return otherDriver
}

/** The driver of `handle` when it is a Drizzle PostgreSQL transaction, else `undefined`. */
export function driverOfHandle(handle: unknown): DrizzleDriver | undefined {
  return is(handle, PgTransaction) ? driverOf(sessionOf(handle as DrizzleTransaction)) : undefined
}

/**
 * Returns `handle` when it is an open Drizzle PostgreSQL transaction, judged by Drizzle's own brand
 * check (`is(handle, PgTransaction)`) and the driver's transaction state; otherwise throws
 * `OutboxError('NOT_IN_TRANSACTION')`. Sends nothing to the database (postgres.js, which keeps no
 * transaction state, is checked by the guarded statement itself).
 */
export function checkTransaction(handle: unknown): DrizzleTransaction {
  if (!is(handle, PgTransaction)) throw notATransaction(handle)
  const tx = handle as DrizzleTransaction
  const session = sessionOf(tx)
  const driver = driverOf(session)
  const problem = driver.whyNotOpen(session)
  if (problem) throw notInTransaction(problem)
  return tx
}
