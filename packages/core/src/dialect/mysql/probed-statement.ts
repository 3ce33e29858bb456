import type { OutboxError } from '../../outbox/errors.js'
import type { MysqlResult } from './backend.js'
import { mysqlStatusInTransaction, toMysqlResult } from './mysql2-connection.js'
import type { MysqlStatement } from './publisher.js'

/** How {@link runProbedMysqlStatement} reaches the connection. */
export interface ProbedStatementRunner {
  /** Runs `statement` on the transaction's connection; resolves with mysql2's result (rows, or the ResultSetHeader). */
  run(statement: MysqlStatement): Promise<unknown>
  /** Runs `DO 0` on the same connection; resolves with its ResultSetHeader. */
  probe(): Promise<unknown>
  /** The refusal thrown when the server says the connection is not inside a transaction. */
  notInTransaction(): OutboxError
}

/**
 * Runs one statement of a MySQL publish where mysql2's command queue is not at hand (one call at
 * a time): a read as it is; a guarded write (MariaDB), checked by the status flags of its own OK
 * packet (the guard wrote nothing outside a transaction); an unguarded write (MySQL) only after a
 * `DO 0` probe whose OK packet says the connection is inside a transaction (one more round trip,
 * and a COMMIT queued in between by a publish that was not awaited would not be seen).
 *
 * @throws OutboxError `runner.notInTransaction()` when a probe or a guarded write says the connection is in autocommit.
 */
export async function runProbedMysqlStatement(
  runner: ProbedStatementRunner,
  statement: MysqlStatement,
): Promise<MysqlResult> {
  if (!statement.write) return toMysqlResult(await runner.run(statement))
  if (!statement.guarded) {
    const probe = (await runner.probe()) as { serverStatus?: unknown } | undefined
    if (!mysqlStatusInTransaction(probe?.serverStatus)) throw runner.notInTransaction()
    return toMysqlResult(await runner.run(statement))
  }
  const header = (await runner.run(statement)) as { serverStatus?: unknown } | undefined
  // The guard wrote nothing outside a transaction; the OK packet says whether that happened.
  if (!mysqlStatusInTransaction(header?.serverStatus)) throw runner.notInTransaction()
  return toMysqlResult(header)
}
