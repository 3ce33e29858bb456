import type { MysqlResult } from './backend.js'
import type { MysqlStatement } from './publisher.js'

// Structural code over the slice of mysql2 (3.x) that publishing on a mysql2 connection needs,
// written once for @outboxkit/mysql and the Drizzle and TypeORM adapters. Core depends on no
// driver: these types describe mysql2's callback-style connection (the `connection` under a
// mysql2/promise connection, or what TypeORM's mysql driver holds) and its Query command, both
// internal to mysql2, so every field is read defensively.

// Status flags the server sends in every OK packet (mysql2 reads them into its ResultSetHeader).
const SERVER_STATUS_IN_TRANS = 1
const SERVER_STATUS_AUTOCOMMIT = 2

/** The callback of a mysql2 Query command. */
export type Mysql2QueryCallback = (err: Error | null, result?: unknown) => void

/** mysql2's Query command (internal): `start` sends it; returning `null` from `start` ends it unsent. */
export interface Mysql2Command {
  start: (packet: unknown, connection: unknown) => unknown
  onResult?: Mysql2QueryCallback | undefined
  /** `'result'` is emitted as the statement's result (an OK packet's header) arrives, before the next command starts. */
  on(event: 'result', listener: (result: unknown) => void): unknown
}

/** Options mysql2's `Connection.createQuery` takes: the SQL, its values and query flags. */
export type Mysql2QueryOptions = { sql: string; values: unknown[] } & Record<string, unknown>

/**
 * mysql2's callback-style connection (internal fields, read defensively): its command queue
 * (`addCommand`, `query(command)`), its state flags and the server's handshake.
 */
export interface Mysql2Connection {
  addCommand: (...args: unknown[]) => unknown
  query(command: Mysql2Command): unknown
  config?: unknown
  _released?: unknown
  _fatalError?: unknown
  _protocolError?: unknown
  _closing?: unknown
  _isMariaDB?: unknown
  _handshakePacket?: { serverVersion?: string } | null | undefined
  stream?: { destroyed?: boolean } | null | undefined
  constructor: {
    createQuery?: (
      options: Mysql2QueryOptions,
      cb: Mysql2QueryCallback,
      unused: undefined,
      config: unknown,
    ) => Mysql2Command
  }
}

/** Query flags every statement of outboxkit runs with, whatever the connection's own options. */
const QUERY_OPTIONS = { rowsAsArray: false, nestTables: false, typeCast: true } as const

/**
 * `value` as mysql2's callback-style connection (it has mysql2's command queue), or `undefined`.
 * For a mysql2/promise connection, pass its `connection` property.
 */
export function asMysql2Connection(value: unknown): Mysql2Connection | undefined {
  const c = value as Partial<Mysql2Connection> | null | undefined
  return c && typeof c === 'object' && typeof c.addCommand === 'function' && typeof c.query === 'function'
    ? (c as Mysql2Connection)
    : undefined
}

/**
 * Whether mysql2's connection can take a statement: `'released'` (a pool connection given back
 * to its pool), `'closed'` (closed, closing or broken), else `'open'`.
 */
export function mysql2ConnectionState(connection: Mysql2Connection): 'open' | 'released' | 'closed' {
  if (connection._released === true) return 'released'
  if (
    connection._fatalError ||
    connection._protocolError ||
    connection._closing ||
    connection.stream?.destroyed
  ) {
    return 'closed'
  }
  return 'open'
}

/** True when the server of `connection` said it is MariaDB in its handshake. */
export function isMariaDbConnection(connection: Mysql2Connection): boolean {
  if (connection._isMariaDB === true) return true
  return /mariadb/i.test(connection._handshakePacket?.serverVersion ?? '')
}

/**
 * True when the status flags of an OK packet (`serverStatus` of mysql2's ResultSetHeader) say
 * the session is inside a transaction: an explicit one, or `autocommit = 0` (always in one).
 */
export function mysqlStatusInTransaction(serverStatus: unknown): boolean {
  if (typeof serverStatus !== 'number') return false
  return (serverStatus & SERVER_STATUS_IN_TRANS) !== 0 || (serverStatus & SERVER_STATUS_AUTOCOMMIT) === 0
}

/** A mysql2 result (rows of a read, or a write's ResultSetHeader) as a {@link MysqlResult}. */
export function toMysqlResult(result: unknown): MysqlResult {
  if (Array.isArray(result)) return { rows: result as Record<string, unknown>[], affectedRows: 0 }
  return {
    rows: [],
    affectedRows: Number((result as { affectedRows?: unknown } | undefined)?.affectedRows ?? 0),
  }
}

/** True when {@link sendMysql2Statement} can queue commands on `connection` (mysql2 3.x's `Connection.createQuery`). */
export function canQueueMysql2Commands(connection: Mysql2Connection): boolean {
  return typeof connection.constructor?.createQuery === 'function'
}

/** Hooks of {@link sendMysql2Statement}. */
export interface Mysql2SendOptions {
  /** The error for a connection the server reports outside a transaction (nothing was written). */
  notInTransaction(): Error
  /**
   * Called when the statement's turn comes, before it is sent: an error refuses it unsent
   * (e.g. the ORM's transaction flags say it ended meanwhile). Default: the connection's state.
   */
  beforeSend?(): Error | undefined
  /** Called right before the statement is sent (e.g. to log it). */
  onSend?(): void
  /** Called with the error of a statement that was sent (e.g. to log it). */
  onError?(error: Error): void
}

/**
 * Queues one statement of a MySQL publish on mysql2's connection and checks the transaction at
 * the moment mysql2 sends it, after every command queued before it on that connection finished
 * (so a publish that was not awaited, queued behind the caller's COMMIT, is refused unsent):
 * - a read (`statement.write` false) is sent as it is;
 * - a guarded write (`statement.guarded`: it carries `MARIADB_TRANSACTION_GUARD`) writes nothing
 *   outside a transaction, and the status flags of its OK packet tell that case apart:
 *   `notInTransaction()`; no extra round trip;
 * - an unguarded write (MySQL, which has no `@@in_transaction`) is queued right behind a `DO 0`
 *   probe, with nothing in between, and sent only if the probe's OK packet says the connection
 *   is inside a transaction: one more round trip.
 *
 * Needs mysql2's command API ({@link canQueueMysql2Commands}).
 */
export function sendMysql2Statement(
  connection: Mysql2Connection,
  statement: MysqlStatement,
  options: Mysql2SendOptions,
): Promise<MysqlResult> {
  const createQuery = connection.constructor.createQuery
  if (typeof createQuery !== 'function') {
    return Promise.reject(
      new TypeError('[outboxkit] [core] this mysql2 connection has no Connection.createQuery'),
    )
  }
  const mode = !statement.write ? 'read' : statement.guarded ? 'guarded' : 'probe'
  const beforeSend = options.beforeSend ?? (() => stateRefusal(connection, options))
  return new Promise<MysqlResult>((resolve, reject) => {
    let status: unknown
    let probeError: Error | null = null
    let probe: Mysql2Command | undefined
    if (mode === 'probe') {
      probe = createQuery(
        { sql: 'DO 0', values: [] },
        (err) => {
          if (err) probeError = err
        },
        undefined,
        connection.config,
      )
      probe.on('result', (header) => {
        status = (header as { serverStatus?: unknown } | undefined)?.serverStatus
      })
    }
    let sent = false
    const query = createQuery(
      { sql: statement.sql, values: statement.params, ...QUERY_OPTIONS },
      (err, result) => {
        if (err) {
          if (sent) options.onError?.(err)
          return reject(err)
        }
        if (
          mode === 'guarded' &&
          !mysqlStatusInTransaction((result as { serverStatus?: unknown } | undefined)?.serverStatus)
        ) {
          // The guard was false: the statement wrote nothing.
          return reject(options.notInTransaction())
        }
        resolve(toMysqlResult(result))
      },
      undefined,
      connection.config,
    )
    const send = query.start
    query.start = function start(this: Mysql2Command, packet, conn) {
      // Runs when the statement's turn comes (right after the probe's answer), before it is sent.
      const refused =
        beforeSend() ??
        probeError ??
        (mode === 'probe' && !mysqlStatusInTransaction(status) ? options.notInTransaction() : undefined)
      if (refused) {
        this.onResult?.(refused)
        return null
      }
      sent = true
      options.onSend?.()
      return send.call(this, packet, conn)
    }
    if (probe) connection.query(probe)
    connection.query(query)
  })
}

/** The default `beforeSend`: a released or closed connection is outside any transaction. */
function stateRefusal(connection: Mysql2Connection, options: Mysql2SendOptions): Error | undefined {
  return mysql2ConnectionState(connection) === 'open' ? undefined : options.notInTransaction()
}
