import type { Outbox } from '@outboxkit/core'
import { quoteIdent } from '@outboxkit/core/adapter'
import { publish, publishMany } from '@outboxkit/pg'
import type pg from 'pg'
import { randomInt } from './database.js'
import type { LedgerTables } from './ledger.js'

/** Counters of {@link produce}. */
export interface ProducerStats {
  transactions: number
  committedTransactions: number
  rolledBackTransactions: number
  committedMessages: number
  rolledBackMessages: number
  /** Transactions whose COMMIT failed (the `produced` table still tells what committed). */
  commitErrors: number
}

/** Options of {@link produce}. */
export interface ProduceOptions {
  pool: pg.Pool
  outbox: Outbox
  tables: LedgerTables
  /** Concurrent producer loops. */
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
}

/**
 * Runs `producers` loops of business transactions: each BEGINs, publishes 1..`maxBatch` messages
 * with `@outboxkit/pg` (one `publish` or one `publishMany`), writes their ids to `produced` in the
 * same transaction, then COMMITs, or (with probability `rollbackRate`) rolls back, either plainly
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
  }
  const topic = options.topic ?? 'work'
  const produced = quoteIdent(options.tables.produced)
  const rolledBack = quoteIdent(options.tables.rolledBack)
  let seq = 0
  async function loop() {
    while (options.keepGoing(stats)) {
      if (options.throttle && (await options.throttle())) continue
      stats.transactions++
      const n = randomInt(1, options.maxBatch)
      const messages = Array.from({ length: n }, () => ({ topic, payload: { seq: seq++ } }))
      const client = await options.pool.connect()
      let ids: string[] = []
      try {
        await client.query('BEGIN')
        const results =
          n === 1
            ? [await publish(options.outbox, client, messages[0]!)]
            : await publishMany(options.outbox, client, messages)
        ids = results.map((r) => r.id)
        await client.query(`INSERT INTO ${produced} (id, topic) SELECT unnest($1::uuid[]), $2`, [ids, topic])
        const roll = Math.random()
        if (roll < options.rollbackRate) {
          if (roll < options.rollbackRate / 2) await client.query('SELECT 1 / 0').catch(() => {})
          await client.query('ROLLBACK')
          await options.pool.query(`INSERT INTO ${rolledBack} (id) SELECT unnest($1::uuid[])`, [ids])
          stats.rolledBackTransactions++
          stats.rolledBackMessages += n
        } else {
          try {
            await client.query('COMMIT')
            stats.committedTransactions++
            stats.committedMessages += n
          } catch {
            stats.commitErrors++
          }
        }
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {})
        throw err
      } finally {
        client.release()
      }
    }
  }
  await Promise.all(Array.from({ length: options.producers }, loop))
  return stats
}
