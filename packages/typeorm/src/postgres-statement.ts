import type { OutboxError } from '@outboxkit/core'
import type { PostgresPublishStatement } from '@outboxkit/core/adapter'
import { refuse, type TypeormOpenTransaction } from './transaction-handle.js'

type TransactionStatus = 'I' | 'T' | 'E' | null

/** The slice of a pg `Client` / `PoolClient` used here (pg >= 8.21 for `getTransactionStatus`). */
interface PgClient {
  query(query: PgQuery): unknown
  /** The backend's transaction status from its last ReadyForQuery: idle, in a transaction, failed. */
  getTransactionStatus(): TransactionStatus
}

/** The slice of pg's `Query` used here: a submittable whose `submit` may return an Error. */
interface PgQuery {
  submit(connection: unknown): Error | null | undefined
  callback?: (err: Error | null, result?: { rows: Record<string, unknown>[] }) => void
}

type PgQueryClass = new (config: { text: string; values: unknown[] }) => PgQuery

/**
 * An open TypeORM transaction on the `postgres` driver. `pg` is set when the driver is node-postgres
 * >= 8.21 (it reports the transaction status); it is absent for older pg and for pg-native.
 */
export interface PostgresTransaction extends TypeormOpenTransaction {
  readonly pg?: { readonly client: PgClient; readonly Query: PgQueryClass }
}

function failed(what: string, cause?: unknown): OutboxError {
  return refuse(
    `${what} whose transaction failed (an earlier statement errored, so PostgreSQL ignores everything until ROLLBACK)`,
    'Roll it back and retry the unit of work, or run the statement that may fail in a nested manager.transaction() (a savepoint). Nothing was written.',
    cause,
  )
}

/**
 * Why the statement must not run, judged from TypeORM's flags and pg's transaction status, or
 * `undefined` when the transaction is open.
 */
function refusal(tx: TypeormOpenTransaction, status: TransactionStatus | undefined): OutboxError | undefined {
  const { runner, what, runnerSubject } = tx
  if (runner.isReleased) {
    return refuse(`${runnerSubject} was released while publish was running (its transaction ended)`)
  }
  if (!runner.isTransactionActive) {
    return refuse(`${what} whose transaction committed or rolled back while publish was running`)
  }
  if (status === undefined || status === 'T') return undefined
  if (status === 'E') return failed(what)
  if (status === 'I') {
    return refuse(
      `${what} whose connection is not inside a transaction (PostgreSQL reports it idle: a raw COMMIT or ROLLBACK ended it, or publish was not awaited before the transaction finished)`,
    )
  }
  return refuse(`${what} whose connection is not connected`)
}

/**
 * Adds pg's transaction status to a transaction TypeORM reports open, refusing it unless PostgreSQL
 * is inside that transaction ('T'). Costs no round trip: pg keeps the status of the last
 * ReadyForQuery. Without pg >= 8.21 (or with pg-native) only TypeORM's flags are checked.
 *
 * @throws OutboxError `NOT_IN_TRANSACTION` when PostgreSQL reports the connection idle or its
 * transaction failed.
 */
export async function postgresTransaction(tx: TypeormOpenTransaction): Promise<PostgresTransaction> {
  // Public QueryRunner API: resolves to the runner's pg PoolClient (already connected, since its
  // transaction is active), without touching the pool.
  const client = (await tx.runner.connect()) as Partial<PgClient> | null | undefined
  const Query = (tx.dataSource.driver as { postgres?: { Query?: unknown } } | undefined)?.postgres?.Query
  const status =
    typeof client?.getTransactionStatus === 'function' ? client.getTransactionStatus() : undefined
  const refused = refusal(tx, status)
  if (refused) throw refused
  if (status === undefined || typeof Query !== 'function' || typeof client?.query !== 'function') return tx
  return { ...tx, pg: { client: client as PgClient, Query: Query as PgQueryClass } }
}

/**
 * Runs the publish statement on the transaction's own connection, one round trip.
 *
 * With pg >= 8.21 the statement goes to the runner's pg client as a pg `Query` that checks the
 * transaction again at the moment pg sends it, after every statement queued before it on that
 * connection has finished: a publish that was not awaited, and so queued behind TypeORM's COMMIT
 * or ROLLBACK, fails without sending anything instead of committing on its own. TypeORM's logger
 * still logs the statement (and its error); TypeORM subscribers' `beforeQuery`/`afterQuery` do
 * not see it.
 *
 * Without pg >= 8.21 the statement runs through TypeORM's `queryRunner.query()` after TypeORM's
 * flags are checked again.
 */
export function runPostgresStatement(
  tx: PostgresTransaction,
  statement: PostgresPublishStatement,
): Promise<readonly Record<string, unknown>[]> {
  const pg = tx.pg
  if (!pg) return viaQueryRunner(tx, statement)
  // TypeORM's logger is called as TypeORM's own query() would; a throwing logger must not break the send.
  const log = (fn: (logger: TypeormOpenTransaction['dataSource']['logger']) => unknown) => {
    try {
      if (tx.dataSource.logger) fn(tx.dataSource.logger)
    } catch {}
  }
  return new Promise((resolve, reject) => {
    const query = new pg.Query({ text: statement.text, values: statement.values })
    const send = query.submit
    let sent = false
    query.callback = (err, result) => {
      if (!err) return resolve(result?.rows ?? [])
      if (sent) log((l) => l.logQueryError(err, statement.text, statement.values, tx.runner))
      reject(err)
    }
    // pg's client treats an Error returned from submit() as the query's failure and sends nothing.
    query.submit = function submit(this: PgQuery, connection: unknown) {
      const refused = refusal(tx, pg.client.getTransactionStatus())
      if (refused) return refused
      sent = true
      log((l) => l.logQuery(statement.text, statement.values, tx.runner))
      return send.call(this, connection)
    }
    pg.client.query(query)
  })
}

async function viaQueryRunner(
  tx: TypeormOpenTransaction,
  statement: PostgresPublishStatement,
): Promise<readonly Record<string, unknown>[]> {
  const refused = refusal(tx, undefined)
  if (refused) throw refused
  try {
    return rowsOf(await tx.runner.query(statement.text, [...statement.values], true))
  } catch (err) {
    // TypeORM's QueryFailedError copies the pg error's fields, SQLSTATE `code` included.
    if ((err as { code?: unknown } | null)?.code === '25P02') throw failed(tx.what, err)
    throw err
  }
}

/**
 * The result rows of `queryRunner.query()`: a structured `QueryResult` (`records`), or the raw
 * form TypeORM returns by default (rows, or `[rows, rowCount]` for UPDATE and DELETE).
 */
export function rowsOf(result: unknown): Record<string, unknown>[] {
  if (Array.isArray(result)) {
    if (result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0]
    return result
  }
  const records = (result as { records?: unknown } | null | undefined)?.records
  return Array.isArray(records) ? records : []
}
