// The crash-test ledger of a forwarder, read back from the broker: producers commit (and
// sometimes roll back) keyed messages on PostgreSQL, the ids of both are kept, and the verdict
// compares them with what the broker holds: lost, phantom, duplicates and per-key commit order.
import type { Outbox } from '@outboxkit/core'
import { publish } from '@outboxkit/pg'
import type pg from 'pg'

/** A committed message of the ledger: its id and key, in the order its producer committed it. */
export interface LedgerMessage {
  readonly id: string
  readonly key: string
}

/** One message as the broker holds it (in the broker's order). */
export interface BrokerRecord {
  readonly id: string
  readonly key: string | null
}

/** What the producers of {@link produceKeyed} committed and rolled back. */
export interface ProducedLedger {
  /** Committed messages, each producer's in commit order (keys are owned by one producer). */
  readonly committed: LedgerMessage[]
  /** Ids published in a transaction that rolled back: the broker must never hold them. */
  readonly rolledBack: string[]
  readonly transactions: number
}

/** Options of {@link produceKeyed}. */
export interface ProduceKeyedOptions {
  readonly pool: pg.Pool
  readonly outbox: Outbox
  readonly topic: string
  /** Concurrent producer loops; producer `p` owns the keys `p<p>k<j>`. Default 2. */
  readonly producers?: number
  /** Keys per producer. Default 3. */
  readonly keysPerProducer?: number
  /** Probability that a transaction rolls back after publishing. Default 0.1. */
  readonly rollbackRate?: number
  /** Messages per transaction: 1 to this. Default 4. */
  readonly maxBatch?: number
  /** Pause between two transactions of a producer, in ms. Default 10. */
  readonly pauseMs?: number
  /** Keep producing while this returns true. */
  keepGoing(): boolean
}

const pick = (n: number) => Math.floor(Math.random() * n)

/**
 * Runs producer loops of business transactions: each begins, publishes 1..`maxBatch` messages
 * with keys of its own, then commits, or rolls back (`rollbackRate`). A key belongs to one
 * producer, so its commit order is the order its producer committed it.
 */
export async function produceKeyed(options: ProduceKeyedOptions): Promise<ProducedLedger> {
  const ledger = { committed: [] as LedgerMessage[], rolledBack: [] as string[], transactions: 0 }
  const { producers = 2, keysPerProducer = 3, rollbackRate = 0.1, maxBatch = 4, pauseMs = 10 } = options
  let seq = 0
  const loop = async (p: number) => {
    while (options.keepGoing()) {
      const messages = Array.from({ length: 1 + pick(maxBatch) }, () => ({
        key: `p${p}k${pick(keysPerProducer)}`,
        seq: seq++,
      }))
      const client = await options.pool.connect()
      try {
        await client.query('BEGIN')
        const ids: LedgerMessage[] = []
        for (const m of messages) {
          const payload = { seq: m.seq }
          const { id } = await publish(options.outbox, client, { topic: options.topic, key: m.key, payload })
          ids.push({ id, key: m.key })
        }
        ledger.transactions++
        if (Math.random() < rollbackRate) {
          await client.query('ROLLBACK')
          ledger.rolledBack.push(...ids.map((m) => m.id))
        } else {
          await client.query('COMMIT')
          ledger.committed.push(...ids)
        }
      } finally {
        client.release()
      }
      await new Promise((resolve) => setTimeout(resolve, pauseMs))
    }
  }
  await Promise.all(Array.from({ length: producers }, (_, p) => loop(p)))
  return ledger
}

/** The verdict of a run: what the broker holds against what was committed. */
export interface BrokerLedgerVerdict {
  readonly committed: number
  readonly rolledBack: number
  /** Records the broker holds (duplicates included). */
  readonly received: number
  /** Committed ids the broker does not hold. */
  readonly lost: string[]
  /** Ids the broker holds that never committed (rolled back or unknown). */
  readonly phantom: string[]
  /** Records beyond the first of their id. */
  readonly duplicates: number
  /** The keys whose messages first appear in the broker out of commit order. */
  readonly outOfOrderKeys: string[]
}

/**
 * Compares the broker's records (in its order) with the ledger: every committed id present
 * (`lost` empty), no other id (`phantom` empty), how many repeats, and for each key whether the
 * first appearances of its messages follow commit order.
 */
export function brokerLedgerVerdict(
  ledger: ProducedLedger,
  received: readonly BrokerRecord[],
): BrokerLedgerVerdict {
  const committedIds = new Set(ledger.committed.map((m) => m.id))
  const firstSeen: string[] = []
  const seen = new Set<string>()
  for (const r of received) {
    if (seen.has(r.id)) continue
    seen.add(r.id)
    firstSeen.push(r.id)
  }
  const keyOf = new Map(ledger.committed.map((m) => [m.id, m.key]))
  const outOfOrderKeys: string[] = []
  for (const key of new Set(ledger.committed.map((m) => m.key))) {
    const expected = ledger.committed.filter((m) => m.key === key).map((m) => m.id)
    const actual = firstSeen.filter((id) => keyOf.get(id) === key)
    if (expected.join() !== actual.join()) outOfOrderKeys.push(key)
  }
  return {
    committed: ledger.committed.length,
    rolledBack: ledger.rolledBack.length,
    received: received.length,
    lost: ledger.committed.filter((m) => !seen.has(m.id)).map((m) => m.id),
    phantom: firstSeen.filter((id) => !committedIds.has(id)),
    duplicates: received.length - firstSeen.length,
    outOfOrderKeys,
  }
}
