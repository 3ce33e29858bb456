// The crash test of a forwarder: producers commit and roll back keyed messages on PostgreSQL
// while relay processes forward them into the broker and are SIGKILLed every ~2 s (a
// replacement started each time); then the ledger is read back from the broker.
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { defineOutbox, migrate } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import pg from 'pg'
import { expect } from 'vitest'
import { testDatabaseUrl, uniqueTableName, waitFor } from '../database.js'
import {
  type BrokerLedgerVerdict,
  type BrokerRecord,
  brokerLedgerVerdict,
  type ProducedLedger,
  produceKeyed,
} from './broker-ledger.js'
import { RELAY_CHILD_ENV, type RelayChildConfig } from './relay-child.js'

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url))
const childPath = fileURLToPath(new URL('./relay-child.ts', import.meta.url))

/** Options of {@link runBrokerCrash}. */
export interface BrokerCrashOptions {
  /** Prefix of the outbox table (a plain identifier). */
  readonly name: string
  /** Absolute path of the package's forwarder module (see `relay-child.ts`). */
  readonly forwarderModule: string
  /** What the forwarder module's `createForwarder` is given. */
  readonly broker: Record<string, unknown>
  /** The records the broker holds that this function has not been given yet, in broker order. */
  readNew(): Promise<BrokerRecord[]>
  /** How long the producers run. Default 15 000 ms. */
  readonly produceMs?: number
  /** A relay is killed this often (while any message is unconfirmed). Default 2 000 ms. */
  readonly killEveryMs?: number
  /** Relay processes running at once. Default 2. */
  readonly relays?: number
  /** Probability that a producer transaction rolls back. Default 0.1. */
  readonly rollbackRate?: number
  /** Bound on the drain once the producers stopped. Default 60 000 ms. */
  readonly drainTimeoutMs?: number
}

/** What a crash run did and what the broker holds. */
export interface BrokerCrashReport {
  readonly verdict: BrokerLedgerVerdict
  readonly ledger: ProducedLedger
  readonly kills: number
  /** Kills at which committed messages were not yet in the broker (the kill landed mid-drain). */
  readonly killsMidDrain: number
  /** Every record the broker holds, in its order. */
  readonly received: BrokerRecord[]
  /** How long the drain took once the producers stopped. */
  readonly drainMs: number
}

/** Relay processes of one run. */
class RelayChildren {
  readonly #running: ChildProcess[] = []
  constructor(readonly config: RelayChildConfig) {}

  /** Starts one; resolves once its relay started. */
  async start(): Promise<void> {
    const child = spawn(process.execPath, ['--import', 'tsx', childPath], {
      cwd: repoRoot,
      env: {
        ...process.env,
        TSX_TSCONFIG_PATH: `${repoRoot}tsconfig.json`,
        [RELAY_CHILD_ENV]: JSON.stringify(this.config),
      },
      stdio: ['pipe', 'pipe', 'inherit'],
    })
    this.#running.push(child)
    child.on('exit', () => this.#running.splice(this.#running.indexOf(child) >>> 0, 1))
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('started') && resolve())
      child.once('exit', (code) => reject(new Error(`a relay process exited with ${code} before it started`)))
    })
  }

  get count(): number {
    return this.#running.length
  }

  /** SIGKILLs the oldest running relay; resolves once it exited. */
  async killOldest(): Promise<void> {
    const child = this.#running[0]
    if (!child) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.kill('SIGKILL')
    await exited
  }

  async killAll(): Promise<void> {
    while (this.#running.length > 0) await this.killOldest()
  }
}

/** Reads the broker into `received` until every committed id is there (or the bound passes). */
async function drain(
  ledger: ProducedLedger,
  received: BrokerRecord[],
  read: () => Promise<BrokerRecord[]>,
  timeoutMs: number,
): Promise<void> {
  const ids = new Set(received.map((r) => r.id))
  await waitFor(
    async () => {
      for (const r of await read()) {
        received.push(r)
        ids.add(r.id)
      }
      return ledger.committed.every((m) => ids.has(m.id)) || undefined
    },
    { timeoutMs, intervalMs: 250, what: 'every committed message in the broker' },
  ).catch(() => {})
}

/**
 * Runs the crash test: a fresh outbox table (ordered topic `order.created`), producers for
 * `produceMs`, `relays` relay processes SIGKILLed every `killEveryMs` and replaced, then the
 * last relays drain and the broker is read back. Returns the verdict for the test to assert:
 * `lost` and `phantom` empty, `outOfOrderKeys` empty, `duplicates` as the broker allows.
 */
export async function runBrokerCrash(options: BrokerCrashOptions): Promise<BrokerCrashReport> {
  const { produceMs = 15_000, killEveryMs = 2_000, relays = 2, drainTimeoutMs = 60_000 } = options
  const table = uniqueTableName(options.name)
  const topic = 'order.created'
  const outbox = defineOutbox({ table, orderedTopics: [topic] })
  const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 })
  await migrate(outbox, pgBackend({ pool }))
  const children = new RelayChildren({
    databaseUrl: testDatabaseUrl(),
    table,
    topic,
    forwarderModule: options.forwarderModule,
    broker: options.broker,
    handlerDelayMs: 5,
    leaseMs: 1_500,
  })
  const seen: BrokerRecord[] = []
  const readNew = async () => {
    seen.push(...(await options.readNew()))
  }
  try {
    await Promise.all(Array.from({ length: relays }, () => children.start()))
    const stopAt = Date.now() + produceMs
    const producing = produceKeyed({
      pool,
      outbox,
      topic,
      rollbackRate: options.rollbackRate ?? 0.1,
      // ~50 messages/s over 10 keys: an ordered topic drains each key one message at a time.
      keysPerProducer: 5,
      pauseMs: 50,
      keepGoing: () => Date.now() < stopAt,
    })
    let kills = 0
    let killsMidDrain = 0
    let produced: ProducedLedger | undefined
    producing.then((l) => {
      produced = l
    })
    const killer = async () => {
      while (produced === undefined) {
        await new Promise((resolve) => setTimeout(resolve, killEveryMs))
        await readNew()
        await children.killOldest()
        kills++
        if ((await unconfirmed(pool, table)) > 0) killsMidDrain++
        // Not awaited: the other relay drains meanwhile (a replacement killed before it started is fine).
        children.start().catch(() => {})
      }
    }
    const [ledger] = await Promise.all([producing, killer()])
    while (children.count < relays) await children.start()
    const drainStarted = Date.now()
    await drain(ledger, seen, options.readNew, drainTimeoutMs)
    const drainMs = Date.now() - drainStarted
    return {
      verdict: brokerLedgerVerdict(ledger, seen),
      ledger,
      kills,
      killsMidDrain,
      received: seen,
      drainMs,
    }
  } finally {
    await children.killAll()
    await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {})
    await pool.end()
  }
}

/** Outbox rows not yet delivered (the relay deletes a row once its message is confirmed). */
async function unconfirmed(pool: pg.Pool, table: string): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)
  return Number(rows[0]?.n ?? 0)
}

/**
 * Logs what a crash run did (`label`, e.g. `nats crash`; `heldIn`, where the broker holds the
 * records, e.g. `in the stream`) and asserts what every broker must show: relays were killed, kills
 * landed mid-drain, some transactions rolled back, nothing lost, nothing phantom. The duplicates
 * and the key order are the test's to assert.
 */
export function expectCrashSurvived(report: BrokerCrashReport, label: string, heldIn: string): void {
  const { verdict } = report
  console.info(
    `[${label}] committed ${verdict.committed}, rolled back ${verdict.rolledBack}, ${heldIn} ${verdict.received}, kills ${report.kills} (${report.killsMidDrain} mid-drain), lost ${verdict.lost.length}, phantom ${verdict.phantom.length}, duplicates ${verdict.duplicates}, drained ${report.drainMs} ms after the producers stopped`,
  )
  expect(report.kills, 'relays were killed').toBeGreaterThanOrEqual(3)
  expect(report.killsMidDrain, 'kills landed while messages were unconfirmed').toBeGreaterThan(0)
  expect(verdict.rolledBack, 'some transactions rolled back').toBeGreaterThan(0)
  expect(verdict.lost, 'lost').toEqual([])
  expect(verdict.phantom, 'phantom').toEqual([])
}
