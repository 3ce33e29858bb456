import { OutboxError, type ProcessOnceFn } from '@outboxkit/core'
import {
  assertKnownOptions,
  createPostgresPublisher,
  formatValue,
  type PostgresPublishStatement,
  type Publisher,
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
  named: boolean,
  callback: (err: Error | null, res?: pg.QueryResult) => void,
): pg.Query {
  // Unnamed by default: pg sends Parse, Bind, Execute and Sync together, so the statement lives on
  // whichever server connection runs it (a transaction-mode pooler may hand the next transaction
  // another one). Named (pgPublisher({ preparedStatements: true })): PostgreSQL parses and plans
  // the statement once per connection, which needs a direct connection or a pooler that tracks
  // prepared statements (PgBouncer 1.21+ with max_prepared_statements > 0).
  // Unnamed with an inline form (the WAL publish): no values, so pg sends one simple Query message.
  const query = new pg.Query(
    (named
      ? {
          text: statement.text,
          values: statement.values,
          name: statementName(statement.name, statement.text),
        }
      : statement.simple !== undefined
        ? { text: statement.simple }
        : { text: statement.text, values: statement.values }) as pg.QueryConfig,
  )
  const send = query.submit
  ;(query as unknown as { callback: typeof callback }).callback = callback
  // pg's client treats an Error returned from submit() as the query's failure and sends nothing.
  query.submit = function submit(this: pg.Query, connection: pg.Connection) {
    return (refusalForStatus(client.getTransactionStatus()) ?? send.call(this, connection)) as undefined
  }
  return query
}

function executor(named: boolean) {
  return (client: PgTransactionClient, statement: PostgresPublishStatement) =>
    new Promise<Record<string, unknown>[]>((resolve, reject) => {
      const query = transactionBoundQuery(client, statement, named, (err, res) =>
        err ? reject(err) : resolve(res!.rows),
      )
      ;(client.query as (q: unknown) => unknown)(query)
    })
}

/** Options of {@link pgPublisher}. */
export interface PgPublisherOptions {
  /**
   * Send the publish statement as a named prepared statement (one per statement text and
   * connection): PostgreSQL then parses and plans it once per connection instead of on every
   * publish. Needs a direct connection to PostgreSQL, or a pooler that tracks prepared statements
   * (PgBouncer 1.21+ with `max_prepared_statements` > 0, or session mode): through PgBouncer in
   * transaction mode without that, publishes fail with `prepared statement "..." already exists`
   * and the transaction is lost. Default `false` (unnamed, works everywhere).
   *
   * @defaultValue `false`
   */
  preparedStatements?: boolean
}

/** The `publish` and `publishMany` of {@link pgPublisher}, with the same checks and errors as {@link publish}. */
export type PgPublisher = Publisher<PgTransactionClient>

const publishers = new Map<boolean, PgPublisher>()

/**
 * `publish` and `publishMany` with options. `pgPublisher()` is the package's own
 * {@link publish}/{@link publishMany}; `pgPublisher({ preparedStatements: true })` sends named
 * prepared statements instead: opt in only on direct connections (or a pooler that tracks them),
 * see {@link PgPublisherOptions.preparedStatements}.
 *
 * @example
 * ```ts
 * import { pgPublisher } from '@outboxkit/pg'
 * // Direct connections only (no transaction-mode pooler in between).
 * export const { publish, publishMany } = pgPublisher({ preparedStatements: true })
 * ```
 * @throws OutboxError `INVALID_CONFIG` for an unknown option or a `preparedStatements` that is not a boolean.
 */
export function pgPublisher(options: PgPublisherOptions = {}): PgPublisher {
  if (options === null || typeof options !== 'object') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `pgPublisher options must be an object, got ${formatValue(options)}.`,
      {
        source: ADAPTER,
      },
    )
  }
  assertKnownOptions(options, ['preparedStatements'], { source: ADAPTER, what: 'pgPublisher(options)' })
  const named = options.preparedStatements ?? false
  if (typeof named !== 'boolean') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `preparedStatements must be true or false, got ${formatValue(named)}.`,
      { source: ADAPTER },
    )
  }
  let publisher = publishers.get(named)
  if (!publisher) {
    publisher = createPostgresPublisher<PgTransactionClient>({
      name: ADAPTER,
      checkTransaction: checkClient,
      execute: executor(named),
    })
    publishers.set(named, publisher)
  }
  return publisher
}

const publisher = pgPublisher()

/**
 * Publishes one message on a node-postgres client inside an open transaction: the INSERT (and
 * the relay's NOTIFY wake-up) run as one statement, one round trip, on that client, so the
 * message commits or rolls back with your transaction. The statement is unnamed (nothing is left
 * on the server connection), so it works through PgBouncer in transaction mode; for named
 * prepared statements on direct connections, see {@link pgPublisher}.
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

/**
 * Runs `fn` once per message id for the inbox's consumer, inside a node-postgres client inside an open transaction (`BEGIN` ran on it):
 * inserts `(inbox.consumer, message.id)` into the inbox table on `tx` (one statement) and calls
 * `fn` only when that row is new. Resolves `{ processed: true, result }` (`result` is what `fn`
 * returned) or `{ processed: false }` (this consumer already processed the message; `fn` did not
 * run). The row commits or rolls back with your transaction: an error `fn` throws passes through,
 * your transaction rolls back, and the next delivery runs `fn` again. A concurrent transaction
 * with the same id waits for this one to end, then skips (it committed) or runs (it rolled back).
 * Never begins, commits or rolls back; see docs/inbox.md.
 *
 * @example
 * ```ts
 * const client = await pool.connect()
 * try {
 *   await client.query('BEGIN')
 *   const { processed } = await processOnce(inbox, client, message, async () => {
 *     await client.query('INSERT INTO invoices (order_id) VALUES ($1)', [message.payload.orderId])
 *   })
 *   await client.query('COMMIT')
 * } catch (e) { await client.query('ROLLBACK'); throw e } finally { client.release() }
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the same handles {@link publish} refuses (nothing is
 * written); `INVALID_MESSAGE` for a message without a string `id` (1 to 255 characters);
 * `INVALID_CONFIG` for something that is not an inbox of `defineInbox`, or no callback; `TIMEOUT`
 * and `DATABASE` as for publish. Whatever `fn` throws, unchanged.
 */
export const processOnce: ProcessOnceFn<PgTransactionClient> = publisher.processOnce
