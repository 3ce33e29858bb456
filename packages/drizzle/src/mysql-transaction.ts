import {
  asMysql2Connection,
  canQueueMysql2Commands,
  formatValue,
  isMariaDbConnection,
  MARIADB_TRANSACTION_GUARD,
  type Mysql2Connection,
  type MysqlResult,
  type MysqlStatement,
  mysql2ConnectionState,
  runProbedMysqlStatement,
  sendMysql2Statement,
} from '@outboxkit/core/adapter'
import { is } from 'drizzle-orm'
import { type MySqlSession, MySqlTransaction } from 'drizzle-orm/mysql-core'
import { driverError } from './driver-error.js'
import { hasEntityKind } from './entity-kind.js'
import { notATransaction, unsupportedDriver } from './handle.js'
import { notInTransaction } from './refusal.js'

/**
 * A Drizzle MySQL transaction on mysql2 (MySQL 8+, MariaDB 10.6+): the `tx` of
 * `db.transaction(async (tx) => ...)` of `drizzle-orm/mysql2`, or of a nested `tx.transaction(...)`
 * (a savepoint).
 */
export type DrizzleMysqlTransaction = MySqlTransaction<any, any, any, any>

/**
 * How the transaction check runs on the server (mysql2 keeps no transaction state client-side),
 * as `@outboxkit/mysql` does it:
 * - `'guard'` (MariaDB): every write statement carries core's `MARIADB_TRANSACTION_GUARD` and
 *   writes nothing outside a transaction; its OK packet's status flags then tell the refusal apart.
 * - `'probe'` (MySQL): `DO 0` is queued right before each write on the same connection, and the
 *   write is sent only if the probe's OK packet says the connection is inside a transaction.
 * - `'auto'`: `'guard'` when the server's handshake names MariaDB, else `'probe'`.
 */
export type MysqlTransactionCheck = 'auto' | 'guard' | 'probe'

type AnyMysqlSession = MySqlSession<any, any, any, any>

/** `tx.session`: `@internal` in Drizzle's types, the session the transaction runs its queries on. */
function sessionOf(tx: DrizzleMysqlTransaction): AnyMysqlSession {
  return (tx as unknown as { session: AnyMysqlSession }).session
}

/** `session.client`: private in Drizzle, the mysql2/promise connection of the transaction. */
function clientOf(session: AnyMysqlSession): { connection?: unknown; getConnection?: unknown } {
  return (session as unknown as { client: { connection?: unknown; getConnection?: unknown } }).client
}

const ENDED =
  'a Drizzle transaction that already committed or rolled back (its pooled mysql2 connection went back to the pool)'

/** The mysql2 connection of the transaction, or why it cannot take a write. */
function connectionOf(session: AnyMysqlSession): Mysql2Connection | string {
  const client = clientOf(session)
  if (typeof client?.getConnection === 'function') {
    return 'a Drizzle transaction that runs on a mysql2 Pool instead of one connection (Drizzle did not recognise the Pool)'
  }
  const core = asMysql2Connection(client?.connection)
  if (!core) {
    return `a Drizzle mysql2 transaction whose client is ${formatValue(client)}, not a mysql2/promise connection`
  }
  const state = mysql2ConnectionState(core)
  if (state === 'released') return ENDED
  if (state === 'closed') return 'a Drizzle transaction whose mysql2 connection is closed or broken'
  return core
}

/**
 * Returns `handle` when it is a Drizzle transaction on mysql2 that may be open, judged by
 * Drizzle's brand check (`is(handle, MySqlTransaction)`), the session's driver (`MySql2Session`) and
 * its connection (not released to its pool, not closed); otherwise throws
 * `OutboxError('NOT_IN_TRANSACTION')`. Sends nothing: whether the connection is still inside a
 * transaction is decided by the server with the write (see {@link MysqlTransactionCheck}).
 */
export function checkMysqlTransaction(handle: unknown): DrizzleMysqlTransaction {
  if (!is(handle, MySqlTransaction)) throw notATransaction(handle)
  const tx = handle as DrizzleMysqlTransaction
  const session = sessionOf(tx)
  if (!hasEntityKind(session, 'MySql2Session')) throw unsupportedDriver(handle)
  const core = connectionOf(session)
  if (typeof core === 'string') throw notInTransaction(core)
  return tx
}

/** The guard of `tx`'s write statements for this check, or `undefined` (probe). */
export function mysqlGuard(tx: DrizzleMysqlTransaction, check: MysqlTransactionCheck): string | undefined {
  if (check === 'probe') return undefined
  if (check === 'guard') return MARIADB_TRANSACTION_GUARD
  const core = connectionOf(sessionOf(tx))
  return typeof core !== 'string' && isMariaDbConnection(core) ? MARIADB_TRANSACTION_GUARD : undefined
}

/** The mysql2 connection `tx` (and any transaction nested in it) runs on, if it has one. */
export function mysqlConnectionOf(tx: DrizzleMysqlTransaction): object | undefined {
  return asMysql2Connection(clientOf(sessionOf(tx))?.connection)
}

const notInTransactionNow = () =>
  notInTransaction(
    'a Drizzle transaction that already committed or rolled back (its mysql2 connection is no longer inside a transaction)',
  )

/** Runs the statement through Drizzle's own query path (mysql2's `query` on the transaction's connection, Drizzle's logger). */
async function throughDrizzle(session: AnyMysqlSession, statement: MysqlStatement): Promise<unknown> {
  const prepared = session.prepareQuery({ sql: statement.sql, params: statement.params }, undefined) as {
    execute(): Promise<unknown>
  }
  try {
    const [result] = (await prepared.execute()) as [unknown, unknown]
    return result
  } catch (err) {
    throw driverError(err)
  }
}

function logQuery(session: AnyMysqlSession, statement: MysqlStatement): void {
  const { logger } = session as unknown as { logger?: { logQuery?(q: string, p: unknown[]): void } }
  logger?.logQuery?.(statement.sql, statement.params)
}

/**
 * Runs one statement of a MySQL publish on the transaction's connection. Reads, and writes that
 * carry the MariaDB guard, go through Drizzle's query path; a guarded write whose OK packet says
 * the connection is not in a transaction wrote nothing and is refused. Unguarded writes (MySQL)
 * are queued right behind a `DO 0` probe on mysql2's connection and sent only if it says the
 * connection is in a transaction (core's `sendMysql2Statement`).
 */
export async function executeMysql(
  tx: DrizzleMysqlTransaction,
  statement: MysqlStatement,
): Promise<MysqlResult> {
  const session = sessionOf(tx)
  const core = connectionOf(session)
  if (typeof core === 'string') throw notInTransaction(core)
  if (statement.write && !statement.guarded && canQueueMysql2Commands(core)) {
    return sendMysql2Statement(core, statement, {
      notInTransaction: notInTransactionNow,
      onSend: () => logQuery(session, statement),
    })
  }
  // Reads, and guarded writes, through Drizzle; without mysql2's internal command API an
  // unguarded write is probed first, then written (one more round trip, and a COMMIT queued in
  // between by a publish that was not awaited would not be seen).
  return runProbedMysqlStatement(
    {
      run: (s) => throughDrizzle(session, s),
      probe: () => throughDrizzle(session, { ...statement, sql: 'DO 0', params: [] }),
      notInTransaction: notInTransactionNow,
    },
    statement,
  )
}
