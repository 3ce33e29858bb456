import type { PostgresPublishStatement } from '@outboxkit/core/adapter'
import type { DrizzleDriver, DrizzleSession, Rows } from './driver.js'
import { notInTransaction } from './refusal.js'

/** The slice of a node-postgres `Client` (or checked-out `PoolClient`) this driver uses. */
interface PgClient {
  query(query: unknown, values?: unknown[]): unknown
  /** node-postgres >= 8.21 (and pg-native >= 3.8): the transaction status of the last ReadyForQuery. */
  getTransactionStatus?(): 'I' | 'T' | 'E' | null
  /** Set on pg-native clients, which have no `Query.submit` to hook. */
  native?: unknown
  /** pg >= 8.23 `pipeline: true`: queries are sent without waiting for the previous one. */
  pipeline?: boolean
  /** False while a query is in flight. */
  readyForQuery?: boolean
}

/** pg's `Query` class, taken from the client's own constructor (`Client.Query`). */
interface PgQuery {
  callback?: (err: Error | null, res?: { rows: Record<string, unknown>[] }) => void
  submit(connection: unknown): Error | undefined
}
type PgQueryClass = new (config: { text: string; values: unknown[] }) => PgQuery

/** `tx._.session.client`: TS-private in Drizzle, the pg client the transaction runs on. */
function clientOf(session: DrizzleSession): PgClient {
  return (session as unknown as { client: PgClient }).client
}

function statusProblem(status: string | null | undefined): string | undefined {
  if (status === 'T') return undefined
  if (status === 'I') {
    return 'a Drizzle transaction that already committed or rolled back (its pg connection is no longer inside a transaction)'
  }
  if (status === 'E') {
    return 'a Drizzle transaction that failed (a statement in it raised an error, so it can only roll back)'
  }
  return 'a Drizzle transaction whose pg connection reports no transaction status (not connected, or busy with a query pg-native cannot see past)'
}

function whyNotOpen(session: DrizzleSession): string | undefined {
  const client = clientOf(session) as PgClient & { totalCount?: unknown; connect?: unknown }
  if (typeof client?.connect === 'function' && typeof client.totalCount === 'number') {
    // Drizzle checks its client out of the Pool for a transaction; older Drizzle releases miss a Pool
    // from another copy of pg and then run every query of the "transaction" on any free connection.
    return 'a Drizzle transaction that runs on a pg Pool instead of one connection (Drizzle did not recognise the Pool: is pg installed twice?)'
  }
  if (typeof client?.getTransactionStatus !== 'function') {
    return 'a Drizzle node-postgres transaction on a pg client without getTransactionStatus() (pg older than 8.21 cannot report its transaction state: upgrade pg to >= 8.21)'
  }
  return statusProblem(client.getTransactionStatus())
}

function logQuery(session: DrizzleSession, statement: PostgresPublishStatement): void {
  // Drizzle's logger (`drizzle({ logger })`) sees this statement like any other query on the tx.
  const { logger } = session as unknown as { logger?: { logQuery?(q: string, p: unknown[]): void } }
  logger?.logQuery?.(statement.text, statement.values)
}

/**
 * The JS client, not pipelined: the statement goes out as a pg `Query` whose `submit` reads the
 * transaction status again at the moment pg sends it, after every query queued before it on this
 * client has finished (a COMMIT included). If the client is no longer inside a transaction, pg
 * fails the query without sending anything. One round trip; the check costs none.
 */
function sendChecked(
  client: PgClient,
  Query: PgQueryClass,
  statement: PostgresPublishStatement,
): Promise<Rows> {
  return new Promise<Rows>((resolve, reject) => {
    const query = new Query({ text: statement.text, values: statement.values })
    query.callback = (err, res) => (err ? reject(err) : resolve(res!.rows))
    const send = query.submit
    // pg's client treats an Error returned from submit() as the query's failure and sends nothing.
    query.submit = function submit(this: PgQuery, connection: unknown) {
      const problem = statusProblem(client.getTransactionStatus?.())
      return problem ? notInTransaction(problem) : send.call(this, connection)
    }
    client.query(query)
  })
}

/**
 * pg-native and pipelined clients: the status is read and the query handed to pg in the same
 * tick, so nothing can be queued between them. pg-native reports no status while a query runs,
 * and a pipelined client with a query in flight is refused: either way it only refuses wrongly,
 * never accepts wrongly.
 */
async function sendNow(client: PgClient, statement: PostgresPublishStatement): Promise<Rows> {
  const problem =
    statusProblem(client.getTransactionStatus?.()) ??
    (client.pipeline === true && client.readyForQuery !== true
      ? 'a Drizzle transaction whose pipelined pg client still has queries in flight (its transaction state is not known yet; await them first)'
      : undefined)
  if (problem) throw notInTransaction(problem)
  const result = (await client.query(statement.text, statement.values)) as { rows: Record<string, unknown>[] }
  return result.rows
}

function execute(session: DrizzleSession, statement: PostgresPublishStatement): Promise<Rows> {
  const client = clientOf(session)
  logQuery(session, statement)
  const Query = (client.constructor as { Query?: PgQueryClass } | undefined)?.Query
  if (!client.native && client.pipeline !== true && typeof Query?.prototype?.submit === 'function') {
    return sendChecked(client, Query, statement)
  }
  return sendNow(client, statement)
}

/** Drizzle's `drizzle-orm/node-postgres` driver (`NodePgSession`). */
export const nodePostgresDriver: DrizzleDriver = { name: 'node-postgres', whyNotOpen, execute }
