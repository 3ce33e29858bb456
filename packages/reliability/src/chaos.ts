import type { Outbox, OutboxDialect } from '@outboxkit/core'
import { pollUntil, randomInt, reliabilityDatabaseUrl } from './database.js'
import { createLedger, dropLedger, type LedgerTables, ledgerTables, liveRows } from './ledger.js'
import { type LedgerDb, openLedgerDb } from './ledger-db.js'
import { type ProducerStats, produce } from './producer.js'
import { RelayFleet } from './relay-fleet.js'
import type { RelayWorkerConfig } from './relay-worker-config.js'
import { computeVerdict, type Verdict } from './verdict.js'

/** Options of {@link runChaos}. Every field has a CI-sized default. */
export interface ChaosOptions {
  /** The database's dialect. Default `'postgres'`. */
  dialect?: OutboxDialect
  /** Where the database is (see `DatabaseTarget`). Default: `reliabilityDatabaseUrl()` (PostgreSQL). */
  url?: string
  /** Prefix of the run's tables (unique per run). */
  prefix?: string
  /** Relay processes draining at once. Default 3. */
  relays?: number
  /** Concurrent producer loops. Default 3. */
  producers?: number
  /** Stop producing after this many messages (committed + rolled back). Default 3 000. */
  messages?: number
  /** Stop producing after this long, in ms (whichever comes first). Default: no limit. */
  durationMs?: number
  /** A random relay is SIGKILLed (and replaced) every this many ms (random in range). Default 2 000-4 000. */
  killEveryMs?: readonly [number, number]
  /** Keep producing (past `messages`, within `durationMs`) until at least this many relays were killed. Default 0. */
  minKills?: number
  /** Handler failure rate (plain Error). Default 0.05. */
  failRate?: number
  /** Handler `Retry` rate. Default 0.03. */
  retryRate?: number
  /** Transaction rollback rate. Default 0.2. */
  rollbackRate?: number
  /** Messages per transaction, 1 to this. Default 5. */
  maxBatch?: number
  /** Relay lease. Default 3 000 ms. */
  leaseMs?: number
  /** Relay concurrency (and batch size). Default 10. */
  concurrency?: number
  /** Handler sleep after the side effect, in ms. Default [0, 10]. */
  sleepMs?: readonly [number, number]
  /** Producers wait while more than this many rows are live. Default 5 000. */
  maxBacklog?: number
  /** Bound on the final drain. Default 120 000 ms. */
  drainTimeoutMs?: number
  /** Keep the run's tables afterwards (to inspect them). Default false. */
  keepTables?: boolean
  /** Progress lines. */
  log?: (line: string) => void
}

/** The outcome of {@link runChaos}: the {@link Verdict} plus what was done to get it. */
export interface ChaosReport {
  verdict: Verdict
  producer: ProducerStats
  relays: number
  kills: number
  /** Side effects in flight in the killed relays (the duplicate budget from kills). */
  inFlightAtKill: number
  relayErrors: Record<string, number>
  produceMs: number
  drainMs: number
  totalMs: number
}

/**
 * Scenario 2, the chaos run: several relay processes drain while producers commit and roll back,
 * handlers fail and Retry at random, and a random relay is SIGKILLed and replaced every few
 * seconds. When production ends the survivors drain, then the ledger gives the {@link Verdict}.
 */
export async function runChaos(options: ChaosOptions = {}): Promise<ChaosReport> {
  const dialect = options.dialect ?? 'postgres'
  const url = options.url ?? reliabilityDatabaseUrl()
  const log = options.log ?? (() => {})
  const prefix = options.prefix ?? `okrel_chaos_${process.pid}_${Date.now() % 100_000}`
  const tables = ledgerTables(prefix)
  const db = await openLedgerDb({ dialect, url }, { max: (options.producers ?? 3) * 2 + 4 })
  const relays = options.relays ?? 3
  const t0 = Date.now()
  const outbox = await createLedger(db, tables)
  const fleet = new RelayFleet({
    db,
    tables,
    config: (n) => ({ dialect, ...chaosWorkerConfig(options, url, tables, prefix, n) }),
  })
  try {
    await fleet.spawnMany(relays)
    log(`${relays} relays running; producing`)
    const tProduce = Date.now()
    const { producer } = await produceWhileKilling(options, db, outbox, tables, fleet, log)
    const produceMs = Date.now() - tProduce
    log(
      `produced ${producer.committedMessages} committed, ${producer.rolledBackMessages} rolled back; draining`,
    )
    const tDrain = Date.now()
    await pollUntil(async () => (await liveRows(db, tables)) === 0, {
      timeoutMs: options.drainTimeoutMs ?? 120_000,
      intervalMs: 200,
      what: 'the outbox to drain',
    })
    const drainMs = Date.now() - tDrain
    await fleet.stop()
    const verdict = await computeVerdict(db, tables)
    const kills = fleet.deaths.filter((d) => d.cause === 'killed')
    return {
      verdict,
      producer,
      relays,
      kills: kills.length,
      inFlightAtKill: kills.reduce((a, d) => a + d.inFlight, 0),
      relayErrors: relayErrorCounts(fleet),
      produceMs,
      drainMs,
      totalMs: Date.now() - t0,
    }
  } finally {
    await fleet.stop(5_000).catch(() => {})
    if (!options.keepTables) await dropLedger(db, tables).catch(() => {})
    await db.close()
  }
}

/** The worker config of relay number `n` of a chaos run. */
function chaosWorkerConfig(
  options: ChaosOptions,
  url: string,
  tables: LedgerTables,
  prefix: string,
  n: number,
): RelayWorkerConfig {
  const concurrency = options.concurrency ?? 10
  return {
    url,
    tables,
    applicationName: `${prefix.slice(0, 40)}_r${n}`,
    commandTimeoutMs: 15_000,
    relay: {
      concurrency,
      batchSize: concurrency,
      leaseMs: options.leaseMs ?? 3_000,
      pollIntervalMs: 250,
      maxAttempts: 50,
      retry: { baseMs: 20, maxMs: 500 },
      notify: true,
    },
    handler: {
      failRate: options.failRate ?? 0.05,
      retryRate: options.retryRate ?? 0.03,
      retryMaxDelayMs: 200,
      sleepMs: options.sleepMs ?? [0, 10],
    },
    graceMs: 10_000,
  }
}

/** Runs the producers while relays are killed at random and replaced; resolves when both are done. */
async function produceWhileKilling(
  options: ChaosOptions,
  db: LedgerDb,
  outbox: Outbox,
  tables: LedgerTables,
  fleet: RelayFleet,
  log: (line: string) => void,
) {
  const maxMessages = options.messages ?? 3_000
  const deadline = options.durationMs === undefined ? Infinity : Date.now() + options.durationMs
  const maxBacklog = options.maxBacklog ?? 5_000
  let producing = true
  let lastBacklogCheck = 0
  let throttled = false
  const producing$ = produce({
    db,
    outbox,
    tables,
    producers: options.producers ?? 3,
    rollbackRate: options.rollbackRate ?? 0.2,
    maxBatch: options.maxBatch ?? 5,
    // Keep producing past `messages` until `minKills` relays were killed, so a fast machine
    // cannot finish the run before the chaos it is meant to survive.
    keepGoing: (s) =>
      (s.committedMessages + s.rolledBackMessages < maxMessages ||
        fleet.deaths.filter((d) => d.cause === 'killed').length < (options.minKills ?? 0)) &&
      Date.now() < deadline,
    async throttle() {
      if (Date.now() - lastBacklogCheck > 200) {
        lastBacklogCheck = Date.now()
        throttled = (await liveRows(db, tables)) > maxBacklog
      }
      if (throttled) await new Promise((r) => setTimeout(r, 100))
      return throttled
    },
  }).finally(() => {
    producing = false
  })
  const replacements = await killAtRandom(fleet, options.killEveryMs ?? [2_000, 4_000], () => producing, log)
  const producer = await producing$
  await Promise.all(replacements)
  return { producer }
}

/** Kills a running relay every `killEvery` ms (never the last one) while `active()`, spawning a replacement each time. */
async function killAtRandom(
  fleet: RelayFleet,
  killEvery: readonly [number, number],
  active: () => boolean,
  log: (line: string) => void,
): Promise<Promise<unknown>[]> {
  const replacements: Promise<unknown>[] = []
  while (active()) {
    const until = Date.now() + randomInt(killEvery[0], killEvery[1])
    while (active() && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
    if (!active()) break
    // Never kill the last running relay; replacements start in the background.
    const running = fleet.running
    if (running.length < 2) continue
    const death = await fleet.kill(running[Math.floor(Math.random() * running.length)]!)
    if (death) log(`killed relay ${death.pid}: ${death.inFlight} side effects in flight`)
    replacements.push(fleet.spawn())
  }
  return replacements
}

/** Relay errors survived, by `during:code`. */
function relayErrorCounts(fleet: RelayFleet): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const r of fleet.all) {
    for (const e of r.errors) {
      const k = `${e.during}:${e.code}`
      counts[k] = (counts[k] ?? 0) + 1
    }
  }
  return counts
}
