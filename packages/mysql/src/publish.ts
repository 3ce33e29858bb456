import { OutboxError, type ProcessOnceFn } from '@outboxkit/core'
import {
  asMysql2Connection,
  canQueueMysql2Commands,
  createMysqlPublisher,
  formatValue,
  isMariaDbConnection,
  MARIADB_TRANSACTION_GUARD,
  type Mysql2Connection,
  type MysqlResult,
  type MysqlStatement,
  mysql2ConnectionState,
  type Publisher,
  runProbedMysqlStatement,
  sendMysql2Statement,
} from '@outboxkit/core/adapter'
import type { Connection, PoolConnection } from 'mysql2/promise'

/**
 * What `publish` takes: a mysql2/promise `Connection` (from `createConnection`) or a
 * `PoolConnection` checked out with `pool.getConnection()`, on which you started a transaction
 * (`beginTransaction()`, `START TRANSACTION` or `BEGIN`).
 */
export type MysqlTransactionConnection = Connection | PoolConnection

const ADAPTER = 'mysql'

/**
 * How the transaction check runs on the server (mysql2 keeps no transaction state client-side):
 * - `'guard'` (MariaDB): every write statement carries `MARIADB_TRANSACTION_GUARD`, so it writes
 *   nothing outside a transaction; its OK packet's status flags then tell the refusal apart.
 *   No extra round trip.
 * - `'probe'` (MySQL, or a server that does not say it is MariaDB): `DO 0` is queued right before
 *   each write statement on the same connection, and the write is sent only if the probe's OK
 *   packet says the connection is inside a transaction. One extra round trip per write.
 * - `'auto'`: `'guard'` when the server's handshake names MariaDB, else `'probe'`.
 */
export type TransactionCheck = 'auto' | 'guard' | 'probe'

function refuse(what: string): OutboxError {
  return new OutboxError(
    'NOT_IN_TRANSACTION',
    `publish needs a mysql2 connection inside an open transaction, got ${what}. Check out a connection (const conn = await pool.getConnection()), run await conn.beginTransaction(), pass that connection to publish, then await conn.commit(). Nothing was written.`,
    { source: ADAPTER },
  )
}

const notInTransaction = () =>
  refuse(
    'a connection that is not inside a transaction (autocommit, or its transaction already committed or rolled back)',
  )

/** Why mysql2's connection cannot take a write now (released, closed), or `undefined`. */
function stateRefusal(core: Mysql2Connection): OutboxError | undefined {
  const state = mysql2ConnectionState(core)
  if (state === 'released')
    return refuse('a pool connection that was released back to its pool (conn.release())')
  if (state === 'closed') return refuse('a connection that is closed or broken')
  return undefined
}

/** mysql2's connection under the promise wrapper `handle`, or throws `NOT_IN_TRANSACTION` saying why not. */
function coreOf(handle: unknown): Mysql2Connection {
  const h = handle as {
    connection?: unknown
    getConnection?: unknown
    promise?: unknown
    addCommand?: unknown
  } | null
  if (!h || typeof h !== 'object') throw refuse(formatValue(handle))
  if (typeof h.getConnection === 'function') {
    throw refuse(
      `${formatValue(handle)} (a mysql2 Pool runs each query on whichever connection is free, so the message would commit on its own)`,
    )
  }
  const core = asMysql2Connection(h.connection)
  if (!core) {
    if (typeof h.addCommand === 'function' && typeof h.promise === 'function') {
      throw refuse('a callback-style mysql2 connection (pass its promise() wrapper, from mysql2/promise)')
    }
    throw refuse(formatValue(handle))
  }
  const refused = stateRefusal(core)
  if (refused) throw refused
  return core
}

const QUERY_OPTIONS = { rowsAsArray: false, nestTables: false, typeCast: true } as const

async function run(conn: MysqlTransactionConnection, statement: MysqlStatement): Promise<unknown> {
  const [result] = await conn.query({ sql: statement.sql, values: statement.params, ...QUERY_OPTIONS })
  return result
}

/**
 * Without mysql2's command API (not mysql2 3.x): through the promise wrapper, each write checked
 * by its own OK packet (guarded) or by a `DO 0` probe sent first (one more round trip, and a
 * COMMIT queued in between by a publish that was not awaited would not be seen).
 */
function viaPromiseApi(conn: MysqlTransactionConnection, statement: MysqlStatement): Promise<MysqlResult> {
  return runProbedMysqlStatement(
    {
      run: (s) => run(conn, s),
      probe: async () => (await conn.query('DO 0'))[0],
      notInTransaction,
    },
    statement,
  )
}

/**
 * Builds `publish`, `publishMany` and `processOnce` for mysql2 with the given transaction check (`'auto'` in
 * the exported functions; the others exist so both paths can be tested on one server).
 */
export function createMysql2Publisher(
  check: TransactionCheck = 'auto',
): Publisher<MysqlTransactionConnection> {
  const mode = (conn: MysqlTransactionConnection): 'guard' | 'probe' => {
    if (check !== 'auto') return check
    return isMariaDbConnection(coreOf(conn)) ? 'guard' : 'probe'
  }
  return createMysqlPublisher<MysqlTransactionConnection>({
    name: ADAPTER,
    checkTransaction(handle) {
      coreOf(handle)
      return handle as MysqlTransactionConnection
    },
    guard: (conn) => (mode(conn) === 'guard' ? MARIADB_TRANSACTION_GUARD : undefined),
    connectionOf: (conn) => asMysql2Connection((conn as { connection?: unknown }).connection),
    async execute(conn, statement) {
      const core = coreOf(conn)
      if (!canQueueMysql2Commands(core)) return viaPromiseApi(conn, statement)
      return sendMysql2Statement(core, statement, {
        notInTransaction,
        beforeSend: () => stateRefusal(core),
      })
    },
  })
}

const publisher = createMysql2Publisher()

/**
 * Publishes one message on a mysql2/promise connection inside an open transaction, so the
 * message commits or rolls back with your transaction.
 *
 * mysql2 keeps no transaction state client-side, so the check runs on the server with the
 * write: on MariaDB the INSERT carries a guard (`@@in_transaction = 1 OR @@autocommit = 0`) and
 * writes nothing outside a transaction, one round trip in all; on MySQL a `DO 0` probe is queued
 * right before it (its OK packet carries the transaction status), one more round trip. A session
 * with `autocommit = 0` is inside a transaction (an implicit one, ended by the next COMMIT or
 * ROLLBACK) and is accepted. With a `dedupKey`, one more SELECT reads back which id holds it.
 *
 * @example
 * ```ts
 * const conn = await pool.getConnection()
 * try {
 *   await conn.beginTransaction()
 *   await conn.query('INSERT INTO orders (id) VALUES (?)', [orderId])
 *   await publish(outbox, conn, { topic: 'order.created', payload: { orderId } })
 *   await conn.commit()
 * } catch (e) { await conn.rollback(); throw e } finally { conn.release() }
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for a Pool, a connection in autocommit, a finished
 * transaction, a released or closed connection; `INVALID_MESSAGE` for a bad message; `TIMEOUT`
 * for a lock wait timeout or `max_statement_time`; `DATABASE` otherwise.
 */
export const publish = publisher.publish

/**
 * Publishes several messages on a mysql2/promise connection inside an open transaction, with one
 * INSERT (all or nothing). Results come back in the order of `messages`. Same checks and errors
 * as {@link publish}.
 *
 * @example
 * ```ts
 * const [a, b] = await publishMany(outbox, conn, [msgA, msgB])
 * ```
 */
export const publishMany = publisher.publishMany

/**
 * Runs `fn` once per message id for the inbox's consumer, inside a mysql2 connection inside a transaction (`beginTransaction()`):
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
 * const conn = await pool.getConnection()
 * await conn.beginTransaction()
 * const { processed } = await processOnce(inbox, conn, message, () =>
 *   conn.query('INSERT INTO invoices (order_id) VALUES (?)', [orderId]))
 * await conn.commit()
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the same handles {@link publish} refuses (nothing is
 * written); `INVALID_MESSAGE` for a message without a string `id` (1 to 255 characters);
 * `INVALID_CONFIG` for something that is not an inbox of `defineInbox`, or no callback; `TIMEOUT`
 * and `DATABASE` as for publish. Whatever `fn` throws, unchanged.
 */
export const processOnce: ProcessOnceFn<MysqlTransactionConnection> = publisher.processOnce
