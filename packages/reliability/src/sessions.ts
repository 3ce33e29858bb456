import type { Outbox, PublishMessage, PublishResult } from '@outboxkit/core'
import { publish, publishMany } from '@outboxkit/pg'
import type { LedgerDb, LedgerDriver } from './ledger-db.js'
import { positional } from './ledger-sql.js'

/** One business transaction on one connection of the database under test. */
export interface Session {
  begin(): Promise<void>
  publish(messages: PublishMessage<Outbox>[]): Promise<PublishResult[]>
  /** A statement with `$n` placeholders, in the transaction. */
  exec(sql: string, params: readonly unknown[]): Promise<void>
  commit(): Promise<void>
  rollback(): Promise<void>
  /** Gives the connection back (`failed`: it may be broken, so it is discarded). */
  release(failed: boolean): void
}

/** Opens one {@link Session}. */
export type OpenSession = () => Promise<Session>

type DriverOf<D extends LedgerDriver['dialect']> = Extract<LedgerDriver, { dialect: D }>

/** Sessions on a checked-out client of the pg pool. */
function pgSessions(driver: DriverOf<'postgres'>, outbox: Outbox): OpenSession {
  return async () => {
    const client = await driver.pool.connect()
    // A checked-out client has no pool error listener: a server shutdown must not crash us.
    const ignore = () => {}
    client.on('error', ignore)
    const sql = (text: string) => async () => void (await client.query(text))
    return {
      begin: sql('BEGIN'),
      publish: async (messages) =>
        messages.length === 1
          ? [await publish(outbox, client, messages[0]!)]
          : publishMany(outbox, client, messages),
      exec: async (text, params) => void (await client.query(text, params as unknown[])),
      commit: sql('COMMIT'),
      rollback: sql('ROLLBACK'),
      release: (failed) => {
        client.removeListener('error', ignore)
        client.release(failed)
      },
    }
  }
}

/** Sessions on a connection of the mysql2 pool, published with `@outboxkit/mysql`. */
async function mysqlSessions(driver: DriverOf<'mysql'>, outbox: Outbox): Promise<OpenSession> {
  const mysql = await import('@outboxkit/mysql')
  return async () => {
    const conn = await driver.pool.getConnection()
    return {
      begin: () => conn.beginTransaction(),
      publish: async (messages) =>
        messages.length === 1
          ? [await mysql.publish(outbox, conn, messages[0]!)]
          : mysql.publishMany(outbox, conn, messages),
      exec: async (text, params) => {
        const q = positional(text, params)
        await conn.query(q.sql, q.params)
      },
      commit: () => conn.commit(),
      rollback: () => conn.rollback(),
      release: (failed) => (failed ? conn.destroy() : conn.release()),
    }
  }
}

/** Sessions on the one SQLite connection, taking turns, published with `@outboxkit/sqlite`. */
async function sqliteSessions(driver: DriverOf<'sqlite'>, outbox: Outbox): Promise<OpenSession> {
  const sqlite = await import('@outboxkit/sqlite')
  const { db: connection } = driver
  // One connection: a transaction stays open across publish's await, so they take turns.
  let turn: Promise<unknown> = Promise.resolve()
  return async () => {
    let done!: () => void
    const mine = new Promise<void>((resolve) => {
      done = resolve
    })
    const previous = turn
    turn = previous.then(() => mine)
    await previous
    return {
      begin: async () => void connection.exec('BEGIN IMMEDIATE'),
      publish: (messages) => sqlite.publishMany(outbox, connection, messages),
      exec: async (text, params) => {
        const q = positional(text, params)
        connection.prepare(q.sql).run(...q.params)
      },
      commit: async () => void connection.exec('COMMIT'),
      rollback: async () => {
        if (connection.inTransaction) connection.exec('ROLLBACK')
      },
      release: () => {
        if (connection.inTransaction) connection.exec('ROLLBACK')
        done()
      },
    }
  }
}

/** Opens {@link Session}s on `db`'s driver; `@outboxkit/mysql` and `@outboxkit/sqlite` load only for their dialect. */
export async function sessions(db: LedgerDb, outbox: Outbox): Promise<OpenSession> {
  const driver = db.driver
  switch (driver.dialect) {
    case 'postgres':
      return pgSessions(driver, outbox)
    case 'mysql':
      return mysqlSessions(driver, outbox)
    case 'sqlite':
      return sqliteSessions(driver, outbox)
    default:
      throw new Error(`[outboxkit] [reliability] unknown dialect ${JSON.stringify(db.dialect)}`)
  }
}
