import { waitFor } from '@outboxkit/conformance'
import { createRelay, type OutboxBackend } from '@outboxkit/core'
import { expect } from 'vitest'
import { randomInt } from '../../src/database.js'
import { createLedger, dropLedger, ledgerTables } from '../../src/ledger.js'
import type { LedgerDb } from '../../src/ledger-db.js'
import { ledgerSql } from '../../src/ledger-sql.js'
import { type ProducerStats, produce } from '../../src/producer.js'
import { deliveryFigures } from '../../src/report.js'
import { computeVerdict, type Verdict } from '../../src/verdict.js'
import { expectNothingLostOrPhantom } from './verdict-checks.js'

/** Options of {@link restartsDuringDrain}. */
export interface RestartDrainOptions {
  /** Names the run's tables. */
  name: string
  /** Bookkeeping and producers on the dedicated server (the ledger's tables are created there). */
  db: LedgerDb
  /** The relay's backend, on its own connections to the same server (closed by `relay.stop()`). */
  backend: OutboxBackend
  /** Restarts the server (returns once it accepts connections again). */
  restart(): Promise<void>
  /** How many restarts. Default 2. */
  restarts?: number
  /** Whether the relay LISTENs (PostgreSQL): then each restart must be seen as a lost and re-established LISTEN connection. */
  listen: boolean
  /** Bound on the drain after the last restart. Default 30 s. */
  drainTimeoutMs?: number
}

/** What {@link restartsDuringDrain} saw. */
export interface RestartDrainReport {
  verdict: Verdict
  producer: ProducerStats
  restarts: number
  /** Side effects in the ledger, and rows still live, when each restart began. */
  deliveredAtRestarts: number[]
  liveAtRestarts: number[]
  /** Messages committed by the producers after the last restart (they ran throughout). */
  committedAfterLastRestart: number
  /** The relay's `error` events, by `during`. */
  relayErrors: Record<string, number>
  /** The relay's log lines "LISTEN connection lost" and "LISTEN connection re-established". */
  listenLost: number
  listenReestablished: number
  /** From the end of the last restart to the outbox drained. */
  drainAfterLastRestartMs: number
  /** `relay.running` once drained (before stopping it). */
  relayRunning: boolean
  seconds: number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * The database goes away: a relay drains while producers commit and roll back (through the
 * dialect's adapter, outages tolerated), the server is restarted `restarts` times mid-drain, and
 * then the outbox must drain within a bound with the relay still running. The verdict is read
 * from the ledger in raw SQL.
 */
export async function restartsDuringDrain(options: RestartDrainOptions): Promise<RestartDrainReport> {
  const t0 = Date.now()
  const { db } = options
  const restarts = options.restarts ?? 2
  const tables = ledgerTables(`okrel_restart_${options.name}_${process.pid}`)
  const statements = ledgerSql(db.dialect, tables)
  const outbox = await createLedger(db, tables)
  const logs: string[] = []
  const line = (_fields: Record<string, unknown>, message: string) => void logs.push(message)
  const count = (text: string) => logs.filter((l) => l.includes(text)).length
  const relayErrors: Record<string, number> = {}
  const relay = createRelay(outbox, {
    backend: options.backend,
    handlers: {
      async work(message) {
        await db.execute(statements.insertLedger, [message.id, message.attempts, process.pid, message.topic])
        const ms = randomInt(0, 10)
        if (ms > 0) await sleep(ms)
      },
    },
    concurrency: 5,
    batchSize: 10,
    pollIntervalMs: 200,
    leaseMs: 3_000,
    maxAttempts: 50,
    retry: { baseMs: 20, maxMs: 500 },
    notify: true,
    logger: { debug() {}, info: line, warn: line, error: line },
  })
  relay.on('error', (e) => {
    relayErrors[e.during] = (relayErrors[e.during] ?? 0) + 1
  })
  // The server is away at times: a failed count is "not yet".
  const scalar = async (sql: string) => {
    try {
      const [row] = await db.query<{ n: number }>(sql)
      return Number(row?.n ?? 0)
    } catch {
      return undefined
    }
  }
  let producing = true
  let lastBacklogCheck = 0
  let throttled = false
  let producerStats: ProducerStats | undefined
  const producing$ = produce({
    db,
    outbox,
    tables,
    producers: 2,
    rollbackRate: 0.2,
    maxBatch: 5,
    tolerateOutages: true,
    keepGoing: (s) => {
      producerStats = s
      return producing
    },
    // A backlog of a few hundred rows keeps the relay busy without growing the run.
    async throttle() {
      if (Date.now() - lastBacklogCheck > 100) {
        lastBacklogCheck = Date.now()
        throttled = ((await scalar(statements.live)) ?? 0) > 300
      }
      if (throttled) await sleep(20)
      return throttled
    },
  })
  const deliveredAtRestarts: number[] = []
  const liveAtRestarts: number[] = []
  let committedAtLastRestart = 0
  let lastRestartDone = 0
  let producer: ProducerStats
  let relayRunning: boolean
  let drainAfterLastRestartMs: number
  try {
    await relay.start()
    for (let i = 0; i < restarts; i++) {
      // Mid-drain: the relay has delivered since the last restart (so it recovered from it),
      // and messages are waiting.
      const since = deliveredAtRestarts[i - 1] ?? 0
      await waitFor(async () => ((await scalar(statements.delivered)) ?? 0) >= since + 100, {
        timeoutMs: 30_000,
        what: `100 deliveries before restart ${i + 1}`,
      })
      await waitFor(async () => ((await scalar(statements.live)) ?? 0) >= 20, {
        timeoutMs: 30_000,
        what: `a backlog before restart ${i + 1}`,
      })
      deliveredAtRestarts.push((await scalar(statements.delivered))!)
      liveAtRestarts.push((await scalar(statements.live))!)
      const lostBefore = count('LISTEN connection lost')
      const backBefore = count('LISTEN connection re-established')
      committedAtLastRestart = producerStats?.committedMessages ?? 0
      await options.restart()
      lastRestartDone = Date.now()
      if (options.listen) {
        await waitFor(
          () =>
            count('LISTEN connection lost') > lostBefore &&
            count('LISTEN connection re-established') > backBefore,
          {
            timeoutMs: 30_000,
            what: `the LISTEN connection to be lost and re-established after restart ${i + 1}`,
          },
        )
      }
    }
    // Producers keep committing after the last restart, then stop; the relay must drain it all.
    await waitFor(() => (producerStats?.committedMessages ?? 0) >= committedAtLastRestart + 100, {
      timeoutMs: 30_000,
      what: 'the producers to commit again after the last restart',
    })
    producing = false
    producer = await producing$
    await waitFor(async () => (await scalar(statements.live)) === 0, {
      timeoutMs: options.drainTimeoutMs ?? 30_000,
      intervalMs: 100,
      what: 'the drain after the last restart',
    })
    drainAfterLastRestartMs = Date.now() - lastRestartDone
    relayRunning = relay.running
  } finally {
    producing = false
    await producing$.catch(() => {})
    await relay.stop().catch(() => {})
  }
  const verdict = await computeVerdict(db, tables)
  await dropLedger(db, tables).catch(() => {})
  return {
    verdict,
    producer,
    restarts,
    deliveredAtRestarts,
    liveAtRestarts,
    committedAfterLastRestart: producer.committedMessages - committedAtLastRestart,
    relayErrors,
    listenLost: count('LISTEN connection lost'),
    listenReestablished: count('LISTEN connection re-established'),
    drainAfterLastRestartMs,
    relayRunning,
    seconds: (Date.now() - t0) / 1000,
  }
}

/** The figures line fields of a {@link RestartDrainReport}. */
export function restartFigures(r: RestartDrainReport): Record<string, unknown> {
  return {
    ...deliveryFigures(r.verdict),
    restarts: r.restarts,
    deliveredAtRestarts: r.deliveredAtRestarts.join('/'),
    liveAtRestarts: r.liveAtRestarts.join('/'),
    committedAfterLastRestart: r.committedAfterLastRestart,
    producerConnectErrors: r.producer.connectErrors,
    producerFailedTransactions: r.producer.failedTransactions,
    producerCommitErrors: r.producer.commitErrors,
    relayErrors: r.relayErrors,
    listenLost: r.listenLost,
    listenReestablished: r.listenReestablished,
    drainAfterLastRestartMs: r.drainAfterLastRestartMs,
    seconds: r.seconds.toFixed(1),
  }
}

/**
 * What every restart run must show: both restarts landed mid-drain with producers committing
 * before and after them; nothing lost, nothing phantom, no relay stuck (drained within the bound,
 * still running); redeliveries only for what was in flight at a restart.
 */
export function expectRestartsSurvived(r: RestartDrainReport): void {
  const v = r.verdict
  // Both restarts landed mid-drain, with producers committing before and after them.
  expect(r.liveAtRestarts.every((n) => n > 0)).toBe(true)
  expect(r.deliveredAtRestarts[1]!).toBeGreaterThan(r.deliveredAtRestarts[0]!)
  expect(r.committedAfterLastRestart).toBeGreaterThan(0)
  expect(v.rolledBack).toBeGreaterThan(0)
  // Nothing lost, nothing phantom, and no relay stuck: drained within the bound, still running.
  expect(v.committed).toBeGreaterThanOrEqual(r.producer.committedMessages)
  expect(v.committed).toBeLessThanOrEqual(r.producer.committedMessages + r.producer.commitErrorMessages)
  expectNothingLostOrPhantom(v)
  expect(v.live).toBe(0)
  expect(v.dead).toBe(0)
  expect(r.relayRunning).toBe(true)
  // Redeliveries only for what was in flight at a restart (claimed batches, unconfirmed settles).
  expect(v.duplicates).toBeLessThanOrEqual(60)
}
