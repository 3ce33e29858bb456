import type { OutboxError } from '@outboxkit/core'
import {
  asMysql2Connection,
  canQueueMysql2Commands,
  isMariaDbConnection,
  type Mysql2Connection,
  type MysqlResult,
  type MysqlStatement,
  mysql2ConnectionState,
  mysqlStatusInTransaction,
  sendMysql2Statement,
} from '@outboxkit/core/adapter'
import { refuse, type TypeormOpenTransaction } from './transaction-handle.js'

/**
 * An open TypeORM transaction on the `mysql` / `mariadb` driver. `conn` is the runner's mysql2
 * connection when it exposes mysql2's command queue; without it statements go through
 * `queryRunner.query()`.
 */
export interface MysqlTransaction extends TypeormOpenTransaction {
  readonly conn: Mysql2Connection | undefined
  /** The server is MariaDB: writes carry `MARIADB_TRANSACTION_GUARD`. */
  readonly mariadb: boolean
}

/** The runner's connection as mysql2's callback-style connection, when statements can be queued on it. */
function asMysql2(conn: unknown): Mysql2Connection | undefined {
  const c = asMysql2Connection(conn)
  return c && canQueueMysql2Commands(c) ? c : undefined
}

function serverLeft(tx: TypeormOpenTransaction): OutboxError {
  return refuse(
    `${tx.what} whose connection is not inside a transaction (the server reports autocommit: a raw COMMIT or ROLLBACK through query(), a statement that commits implicitly such as DDL, or a deadlock ended it, or publish was not awaited before the transaction finished)`,
    'Roll back and retry the unit of work, and await publish inside the transaction. Nothing was written.',
  )
}

/** Why nothing may be sent now, from TypeORM's flags and the connection's state, or `undefined`. */
function refusal(tx: TypeormOpenTransaction, conn: Mysql2Connection | undefined): OutboxError | undefined {
  const { runner, what, runnerSubject } = tx
  if (runner.isReleased) {
    return refuse(`${runnerSubject} was released while publish was running (its transaction ended)`)
  }
  if (!runner.isTransactionActive) {
    return refuse(`${what} whose transaction committed or rolled back while publish was running`)
  }
  const state = conn ? mysql2ConnectionState(conn) : 'open'
  return state === 'open' ? undefined : refuse(`${what} whose connection is ${state}`)
}

/**
 * Adds the runner's mysql2 connection to a transaction TypeORM reports open (public
 * `queryRunner.connect()`: the connection it already holds, since its transaction is active).
 *
 * @throws OutboxError `NOT_IN_TRANSACTION` when the runner ended meanwhile or its connection is closed.
 */
export async function mysqlTransaction(tx: TypeormOpenTransaction): Promise<MysqlTransaction> {
  const conn = asMysql2(await tx.runner.connect())
  const refused = refusal(tx, conn)
  if (refused) throw refused
  const mariadb = conn ? isMariaDbConnection(conn) : tx.dataSource.options.type === 'mariadb'
  return { ...tx, conn, mariadb }
}

/** TypeORM's logger, called as TypeORM's own `query()` would; a throwing logger must not break the send. */
function log(
  tx: TypeormOpenTransaction,
  fn: (logger: TypeormOpenTransaction['dataSource']['logger']) => unknown,
) {
  try {
    if (tx.dataSource.logger) fn(tx.dataSource.logger)
  } catch {}
}

/**
 * Runs one statement of the publish on the runner's own mysql2 connection, checking the
 * transaction at the moment mysql2 sends it (after every statement queued before it on that
 * connection has finished):
 * - always TypeORM's flags again;
 * - a guarded write (MariaDB) carries `@@in_transaction = 1 OR @@autocommit = 0`, so it writes
 *   nothing outside a transaction, and its OK packet's status flags tell that case apart;
 * - an unguarded write (MySQL) is queued right behind a `DO 0` probe, and sent only if the probe's
 *   OK packet says the connection is inside a transaction (one more round trip).
 *
 * So a publish that was not awaited, queued behind TypeORM's COMMIT or ROLLBACK, fails without
 * writing instead of committing on its own. TypeORM's logger logs the statement (and its error);
 * TypeORM subscribers' `beforeQuery` / `afterQuery` do not see it. Without mysql2's command queue
 * (another driver module) the statement goes through `queryRunner.query()`, see
 * {@link viaQueryRunner}.
 */
export function runMysqlStatement(tx: MysqlTransaction, statement: MysqlStatement): Promise<MysqlResult> {
  const conn = tx.conn
  if (!conn) return viaQueryRunner(tx, statement)
  return sendMysql2Statement(conn, statement, {
    notInTransaction: () => serverLeft(tx),
    beforeSend: () => refusal(tx, conn),
    onSend: () => log(tx, (l) => l.logQuery(statement.sql, statement.params, tx.runner)),
    onError: (err) => log(tx, (l) => l.logQueryError(err, statement.sql, statement.params, tx.runner)),
  })
}

/**
 * Without mysql2's command queue: TypeORM's flags, then (for an unguarded write) a `DO 0` probe
 * and the statement through `queryRunner.query()`, each checked by the status flags of its OK
 * packet. The probe and the write are two calls here, so a COMMIT queued between them is not
 * seen; await publish.
 */
async function viaQueryRunner(tx: MysqlTransaction, statement: MysqlStatement): Promise<MysqlResult> {
  const header = (result: unknown) =>
    (result as { raw?: unknown } | undefined)?.raw as
      | { serverStatus?: unknown; affectedRows?: unknown }
      | undefined
  const refused = refusal(tx, undefined)
  if (refused) throw refused
  if (statement.write && !statement.guarded) {
    if (!mysqlStatusInTransaction(header(await tx.runner.query('DO 0', [], true))?.serverStatus))
      throw serverLeft(tx)
  }
  const result = await tx.runner.query(statement.sql, [...statement.params], true)
  if (!statement.write) {
    const records = (result as { records?: unknown } | undefined)?.records
    return { rows: Array.isArray(records) ? records : [], affectedRows: 0 }
  }
  const ok = header(result)
  if (statement.guarded && !mysqlStatusInTransaction(ok?.serverStatus)) throw serverLeft(tx)
  return { rows: [], affectedRows: Number(ok?.affectedRows ?? 0) }
}
