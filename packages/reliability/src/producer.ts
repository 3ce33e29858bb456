import type { Outbox, PublishMessage, PublishResult } from '@outboxkit/core'
import { randomInt } from './database.js'
import type { LedgerTables } from './ledger.js'
import type { LedgerDb } from './ledger-db.js'
import { ledgerSql } from './ledger-sql.js'
import { transaction } from './producer-transaction.js'
import { sessions } from './sessions.js'

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
  /**
   * A share of the transactions publishes keyed messages on an ordered topic instead, numbered
   * in their key's commit order in the same transaction (`ledger-key-order-sql.ts`; PostgreSQL
   * only). Default: none.
   */
  ordered?: OrderedProduction
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

/** Keyed messages on an ordered topic, in {@link ProduceOptions.ordered}. */
export interface OrderedProduction {
  /** The ordered topic (declared in the outbox's `orderedTopics`). */
  topic: string
  /** How many keys (`k0`, `k1`, ...) the messages are spread over, uniformly. */
  keys: number
  /** Probability that a transaction publishes on `topic` (all its messages keyed). */
  share: number
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
 * `@outboxkit/sqlite`; one `publish` or one `publishMany`), writes their ids to `produced` (and
 * with `ordered`, keyed ones to the per-key commit order) in the same transaction, then commits,
 * or (with probability `rollbackRate`) rolls back, either plainly or after a failing statement,
 * and records the intended ids in `rolledBack`.
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
  const { db, ordered } = options
  const topic = options.topic ?? 'work'
  const statements = ledgerSql(db.dialect, options.tables)
  if (ordered && statements.numberInKey === undefined)
    throw new Error(
      `[outboxkit] [reliability] ordered production is built for PostgreSQL only, not ${db.dialect}`,
    )
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
      const keyed = ordered !== undefined && Math.random() < ordered.share
      const messages = Array.from({ length: n }, () => ({
        topic: keyed ? ordered.topic : topic,
        payload: { seq: seq++ },
        ...(keyed ? { key: `k${randomInt(0, ordered.keys - 1)}` } : {}),
      }))
      try {
        await transaction(open, statements, messages, options.rollbackRate, stats, unrecorded)
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
