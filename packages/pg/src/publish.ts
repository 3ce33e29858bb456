import { OutboxError } from '@outboxkit/core'
import {
  createPostgresPublisher,
  formatValue,
  type PostgresPublishStatement,
  statementName,
} from '@outboxkit/core/adapter'
import pg from 'pg'

/**
 * The slice of a node-postgres client `publish` needs: a `pg.Client` or a `pg.PoolClient` checked
 * out with `pool.connect()`, on which you ran `BEGIN`.
 */
export interface PgTransactionClient {
  query: pg.ClientBase['query']
  /** node-postgres >= 8.21: the backend's transaction status from its last ReadyForQuery. */
  getTransactionStatus(): 'I' | 'T' | 'E' | null
}

const ADAPTER = 'pg'

function refuse(what: string): OutboxError {
  return new OutboxError(
    'NOT_IN_TRANSACTION',
    `publish needs a pg client inside an open transaction, got ${what}. Check out a client (const client = await pool.connect()), run BEGIN on it, pass that client to publish, then COMMIT. Nothing was written.`,
    { source: ADAPTER },
  )
}

function refusalForStatus(status: string | null): OutboxError | undefined {
  if (status === 'T') return undefined
  if (status === 'I') {
    return refuse(
      'a client that is not inside a transaction (autocommit, or its transaction already committed or rolled back)',
    )
  }
  if (status === 'E') return refuse('a client whose transaction failed and must be rolled back')
  return refuse('a client that is not connected')
}

function checkClient(handle: unknown): PgTransactionClient {
  const h = handle as (Partial<PgTransactionClient> & { totalCount?: unknown; connect?: unknown }) | null
  if (!h || typeof h !== 'object') throw refuse(formatValue(handle))
  if (typeof h.getTransactionStatus !== 'function') {
    if (typeof h.connect === 'function' && typeof h.totalCount === 'number') {
      throw refuse(
        'a pg Pool (a pool runs each query on whichever connection is free, so the message would commit on its own)',
      )
    }
    if (typeof h.query === 'function') {
      throw refuse(
        `${formatValue(handle)} without getTransactionStatus() (pg-native, or pg older than 8.21, cannot report its transaction state)`,
      )
    }
    throw refuse(formatValue(handle))
  }
  const refusal = refusalForStatus(h.getTransactionStatus())
  if (refusal) throw refusal
  return h as PgTransactionClient
}

/**
 * A query that checks the transaction status again at the moment pg sends it, after every query
 * queued before it on this client has finished. If the client is no longer inside a transaction
 * it fails without sending anything, so a queued COMMIT can never leave the message in autocommit.
 */
function transactionBoundQuery(
  client: PgTransactionClient,
  statement: PostgresPublishStatement,
  callback: (err: Error | null, res?: pg.QueryResult) => void,
): pg.Query {
  // A named prepared statement (per connection, the name hashed from the text): PostgreSQL parses
  // and plans the CTE once instead of on every publish, which measured +21 % transactions per
  // second with 16 producers (docs/performance.md). Through PgBouncer in transaction mode this
  // needs PgBouncer 1.21+ with max_prepared_statements > 0.
  const query = new pg.Query({
    text: statement.text,
    values: statement.values,
    name: statementName(statement.name, statement.text),
  } as pg.QueryConfig)
  const send = query.submit
  ;(query as unknown as { callback: typeof callback }).callback = callback
  // pg's client treats an Error returned from submit() as the query's failure and sends nothing.
  query.submit = function submit(this: pg.Query, connection: pg.Connection) {
    return (refusalForStatus(client.getTransactionStatus()) ?? send.call(this, connection)) as undefined
  }
  return query
}

function execute(client: PgTransactionClient, statement: PostgresPublishStatement) {
  return new Promise<Record<string, unknown>[]>((resolve, reject) => {
    const query = transactionBoundQuery(client, statement, (err, res) =>
      err ? reject(err) : resolve(res!.rows),
    )
    ;(client.query as (q: unknown) => unknown)(query)
  })
}

const publisher = createPostgresPublisher<PgTransactionClient>({
  name: ADAPTER,
  checkTransaction: checkClient,
  execute,
})

/**
 * Publishes one message on a node-postgres client inside an open transaction: the INSERT (and
 * the relay's NOTIFY wake-up) run as one statement, one round trip, on that client, so the
 * message commits or rolls back with your transaction.
 *
 * The transaction check costs no round trip: it reads `client.getTransactionStatus()` (pg >= 8.21),
 * both when called and again at the moment the statement is sent.
 *
 * @example
 * ```ts
 * const client = await pool.connect()
 * try {
 *   await client.query('BEGIN')
 *   await client.query('INSERT INTO orders (id) VALUES ($1)', [orderId])
 *   await publish(outbox, client, { topic: 'order.created', payload: { orderId } })
 *   await client.query('COMMIT')
 * } catch (e) { await client.query('ROLLBACK'); throw e } finally { client.release() }
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for a Pool, a client in autocommit, or a finished or
 * failed transaction; `INVALID_MESSAGE` for a bad message; `TIMEOUT` when the client's
 * `query_timeout` or the server's `statement_timeout` fires; `DATABASE` otherwise.
 */
export const publish = publisher.publish

/**
 * Publishes several messages on a node-postgres client inside an open transaction, in one
 * statement (one round trip), all or nothing. Results come back in the order of `messages`.
 * Same checks and errors as {@link publish}.
 *
 * @example
 * ```ts
 * const [a, b] = await publishMany(outbox, client, [msgA, msgB])
 * ```
 */
export const publishMany = publisher.publishMany
