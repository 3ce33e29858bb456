import type { Outbox, PublishMessage, PublishResult } from '@outboxkit/core'
import { publish, publishMany } from '@outboxkit/pg'
import { randomInt } from './database.js'
import type { LedgerTables } from './ledger.js'
import type { LedgerDb } from './ledger-db.js'
import { type LedgerSql, ledgerSql, positional } from './ledger-sql.js'

/** Counters of {@link produce}. */
export interface ProducerStats {
  transactions: number
  committedTransactions: number
  rolledBackTransactions: number
  committedMessages: number
  rolledBackMessages: number
  /** Transactions whose COMMIT failed (the `produced` table still tells what committed). */
  commitErrors: number
  /** Messages of the transactions whose COMMIT failed: committed or not, `produced` says. */
  commitErrorMessages: number
  /**
   * Transactions that failed before their COMMIT was sent (with `tolerateOutages`: the server
   * went away): nothing of them committed, and the ids they had published are recorded as
   * rolled back.
   */
  failedTransactions: number
  /** Transactions that could not begin: no connection to be had (with `tolerateOutages`). */
  connectErrors: number
}

/** Options of {@link produce}. */
export interface ProduceOptions {
  /** The database under test (the producers' business transactions run on its driver). */
  db: LedgerDb
  outbox: Outbox
  tables: LedgerTables
  /** Concurrent producer loops (SQLite: their transactions take turns on one connection). */
  producers: number
  /** Keep producing while this returns true. */
  keepGoing(stats: ProducerStats): boolean
  /** Probability that a transaction rolls back after publishing. */
  rollbackRate: number
  /** Messages per transaction: 1 to this. */
  maxBatch: number
  /** Topic of the messages. Default `'work'`. */
  topic?: string
  /** Wait (poll) while this returns true, e.g. to cap the backlog in a soak. */
  throttle?(): Promise<boolean>
  /**
   * Keep going when the database goes away (a server restart): a failed transaction is counted
   * (`failedTransactions`, `commitErrors`), the loop pauses `outagePauseMs` and goes on. Default
   * false: the first error ends the run.
   */
  tolerateOutages?: boolean
  /** Pause after a failure with `tolerateOutages`. Default 50 ms. */
  outagePauseMs?: number
}

/** One business transaction on one connection of the database under test. */
interface Session {
  begin(): Promise<void>
  publish(messages: PublishMessage<Outbox>[]): Promise<PublishResult[]>
  /** A statement with `$n` placeholders, in the transaction. */
  exec(sql: string, params: readonly unknown[]): Promise<void>
  commit(): Promise<void>
  rollback(): Promise<void>
  /** Gives the connection back (`failed`: it may be broken, so it is discarded). */
  release(failed: boolean): void
}

/** Opens {@link Session}s on `db`'s driver; `@outboxkit/mysql` and `@outboxkit/sqlite` load only for their dialect. */
async function sessions(db: LedgerDb, outbox: Outbox): Promise<() => Promise<Session>> {
  const driver = db.driver
  switch (driver.dialect) {
    case 'postgres':
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
    case 'mysql': {
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
    case 'sqlite': {
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
    default:
      throw new Error(`[outboxkit] [reliability] unknown dialect ${JSON.stringify(db.dialect)}`)
  }
}

/**
 * Publishes `messages` in one committed business transaction on `db` and records every id in
 * `produced` (with its message's topic) in the same transaction. Resolves to the results.
 */
export async function publishCommitted(
  db: LedgerDb,
  outbox: Outbox,
  tables: LedgerTables,
  messages: PublishMessage<Outbox>[],
): Promise<PublishResult[]> {
  const statements = ledgerSql(db.dialect, tables)
  const session = await (await sessions(db, outbox))()
  let results: PublishResult[]
  try {
    await session.begin()
    results = await session.publish(messages)
    for (const topic of new Set(messages.map((m) => m.topic))) {
      const ids = results.filter((_, i) => messages[i]!.topic === topic).map((r) => r.id)
      await session.exec(statements.insertProduced(ids.length), [...ids, topic])
    }
    await session.commit()
  } catch (err) {
    await session.rollback().catch(() => {})
    session.release(true)
    throw err
  }
  session.release(false)
  return results
}

/**
 * Runs `producers` loops of business transactions on `db`'s dialect: each begins, publishes
 * 1..`maxBatch` messages with the dialect's adapter (`@outboxkit/pg`, `@outboxkit/mysql` or
 * `@outboxkit/sqlite`; one `publish` or one `publishMany`), writes their ids to `produced` in the
 * same transaction, then commits, or (with probability `rollbackRate`) rolls back, either plainly
 * or after a failing statement, and records the intended ids in `rolledBack`.
 */
export async function produce(options: ProduceOptions): Promise<ProducerStats> {
  const stats: ProducerStats = {
    transactions: 0,
    committedTransactions: 0,
    rolledBackTransactions: 0,
    committedMessages: 0,
    rolledBackMessages: 0,
    commitErrors: 0,
    commitErrorMessages: 0,
    failedTransactions: 0,
    connectErrors: 0,
  }
  const { db } = options
  const topic = options.topic ?? 'work'
  const statements = ledgerSql(db.dialect, options.tables)
  const open = await sessions(db, options.outbox)
  // Ids known not to have committed, still to write to `rolledBack` (the server may be away).
  const unrecorded: string[] = []
  const record = async () => {
    while (unrecorded.length > 0) {
      const ids = unrecorded.splice(0, 100)
      try {
        await db.execute(statements.insertRolledBack(ids.length), ids)
      } catch (err) {
        unrecorded.push(...ids)
        throw err
      }
    }
  }
  let seq = 0
  async function loop() {
    while (options.keepGoing(stats)) {
      if (options.throttle && (await options.throttle())) continue
      stats.transactions++
      const n = randomInt(1, options.maxBatch)
      const messages = Array.from({ length: n }, () => ({ topic, payload: { seq: seq++ } }))
      try {
        await transaction(open, statements, messages, topic, options.rollbackRate, stats, unrecorded)
        if (unrecorded.length > 0) await record()
      } catch (err) {
        if (!options.tolerateOutages) throw err
        await new Promise((r) => setTimeout(r, options.outagePauseMs ?? 50))
      }
    }
  }
  await Promise.all(Array.from({ length: options.producers }, loop))
  await recordWithin(record, options.tolerateOutages ? 30_000 : 0)
  return stats
}

/** Writes the unrecorded rolled-back ids, retrying up to `ms` while the server is away. */
async function recordWithin(record: () => Promise<void>, ms: number): Promise<void> {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      return await record()
    } catch (err) {
      if (Date.now() > deadline) throw err
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}

/** One business transaction of {@link produce}; throws when it failed for a reason other than its planned rollback. */
async function transaction(
  open: () => Promise<Session>,
  statements: LedgerSql,
  messages: PublishMessage<Outbox>[],
  topic: string,
  rollbackRate: number,
  stats: ProducerStats,
  unrecorded: string[],
): Promise<void> {
  let session: Session
  try {
    session = await open()
  } catch (err) {
    stats.connectErrors++
    throw err
  }
  let ids: string[] = []
  let commitSent = false
  let failed = false
  try {
    await session.begin()
    ids = (await session.publish(messages)).map((r) => r.id)
    await session.exec(statements.insertProduced(ids.length), [...ids, topic])
    const roll = Math.random()
    if (roll < rollbackRate) {
      if (roll < rollbackRate / 2) await session.exec(statements.failing, []).catch(() => {})
      // Whether ROLLBACK answers or the connection is gone, nothing of it committed.
      await session.rollback().catch(() => {})
      unrecorded.push(...ids)
      stats.rolledBackTransactions++
      stats.rolledBackMessages += ids.length
      return
    }
    commitSent = true
    try {
      await session.commit()
      stats.committedTransactions++
      stats.committedMessages += ids.length
    } catch {
      failed = true
      stats.commitErrors++
      stats.commitErrorMessages += ids.length
    }
  } catch (err) {
    failed = true
    await session.rollback().catch(() => {})
    if (!commitSent) {
      // Failed before COMMIT was sent: nothing committed, and what it had published never will.
      stats.failedTransactions++
      unrecorded.push(...ids)
    }
    throw err
  } finally {
    session.release(failed)
  }
}
