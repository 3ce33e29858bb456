import { runChild } from '../child-runner.js'
import {
  GRAPHILE_BEST,
  GRAPHILE_DEFAULTS,
  loadGraphileBacklog,
  resetGraphile,
} from '../contenders/graphile.js'
import {
  type BenchRelayOptions,
  type DrainResult,
  loadOutboxBacklog,
  resetOutbox,
} from '../contenders/outboxkit.js'
import { BOSS_BEST, loadBossBacklog, resetBoss } from '../contenders/pg-boss.js'
import type { Job } from '../jobs.js'
import { median, round } from '../stats.js'

/** A drain contender: how to reset, load and drain. */
export interface DrainContender {
  id: string
  label: string
  settings: string
  family: 'outboxkit' | 'graphile-worker' | 'pg-boss' | 'bare-sql'
  prepare(url: string, count: number): Promise<void>
  job(url: string, count: number): Job
  /** Optional: skipped (with the reason recorded) when it cannot run, e.g. an adapter not ready. */
  available?(): Promise<string | undefined>
  /** Run only in the first this-many rounds (slow reference rows). */
  maxRounds?: number
}

/** outboxkit's relay defaults. */
export const RELAY_DEFAULTS: BenchRelayOptions = {}
/** More slots than the defaults (four claims of 500 in flight instead of two): does a no-op drain gain from them? */
export const RELAY_TUNED: BenchRelayOptions = { concurrency: 2_000, batchSize: 500 }

const outboxkitPrepare = async (url: string, count: number) => {
  await resetOutbox(url)
  await loadOutboxBacklog(url, count)
}

/** Checks that `@outboxkit/postgres-js` loads and exports its backend (the hook for when it is not ready). */
export async function postgresJsReady(): Promise<string | undefined> {
  try {
    const mod = await import('@outboxkit/postgres-js')
    return typeof mod.postgresJsBackend === 'function' ? undefined : 'postgresJsBackend is not exported yet'
  } catch (err) {
    return `@outboxkit/postgres-js does not load: ${(err as Error).message.split('\n')[0]}`
  }
}

/** The contenders of scenario 1, in run order. */
export function drainContenders(full: boolean): DrainContender[] {
  const list: DrainContender[] = [
    {
      id: 'outboxkit-pg-defaults',
      label: 'outboxkit (pg), defaults',
      settings: 'core defaults: concurrency 1000, batchSize 500, pool 10',
      family: 'outboxkit',
      prepare: outboxkitPrepare,
      job: (url, count) => ({ kind: 'drain-outboxkit', url, driver: 'pg', count, relay: RELAY_DEFAULTS }),
    },
    {
      id: 'outboxkit-pg-tuned',
      label: 'outboxkit (pg), more slots',
      settings: `concurrency ${RELAY_TUNED.concurrency}, batchSize ${RELAY_TUNED.batchSize}, pool 10`,
      family: 'outboxkit',
      prepare: outboxkitPrepare,
      job: (url, count) => ({ kind: 'drain-outboxkit', url, driver: 'pg', count, relay: RELAY_TUNED }),
    },
    {
      id: 'outboxkit-postgres-js-defaults',
      label: 'outboxkit (postgres.js), defaults',
      settings: 'core defaults: concurrency 1000, batchSize 500, postgres.js max 10',
      family: 'outboxkit',
      prepare: outboxkitPrepare,
      available: postgresJsReady,
      job: (url, count) => ({
        kind: 'drain-outboxkit',
        url,
        driver: 'postgres-js',
        count,
        relay: RELAY_DEFAULTS,
      }),
    },
    {
      id: 'outboxkit-postgres-js-tuned',
      label: 'outboxkit (postgres.js), more slots',
      settings: `concurrency ${RELAY_TUNED.concurrency}, batchSize ${RELAY_TUNED.batchSize}, postgres.js max 10`,
      family: 'outboxkit',
      prepare: outboxkitPrepare,
      available: postgresJsReady,
      job: (url, count) => ({
        kind: 'drain-outboxkit',
        url,
        driver: 'postgres-js',
        count,
        relay: RELAY_TUNED,
      }),
    },
    {
      id: 'graphile-worker-best',
      label: 'graphile-worker 0.18, best',
      settings: 'concurrentJobs 24, localQueue.size 500, completeJobBatchDelay 0, maxPoolSize 26',
      family: 'graphile-worker',
      prepare: async (url, count) => {
        await resetGraphile(url)
        await loadGraphileBacklog(url, count)
      },
      job: (url, count) => ({ kind: 'drain-graphile', url, count, settings: GRAPHILE_BEST }),
    },
    {
      id: 'pg-boss-best',
      label: 'pg-boss 10, best found',
      settings: `${BOSS_BEST.workers} work() loops, batchSize ${BOSS_BEST.batchSize}, polling ${BOSS_BEST.pollingIntervalSeconds} s, pool ${BOSS_BEST.max}`,
      family: 'pg-boss',
      prepare: async (url, count) => {
        await resetBoss(url)
        await loadBossBacklog(url, count)
      },
      job: (url, count) => ({ kind: 'drain-pg-boss', url, count, settings: BOSS_BEST }),
    },
    {
      id: 'bare-sql',
      label: 'bare SQL limit',
      settings: "seed's claim, batch 500 × 4 workers, one DELETE per batch",
      family: 'bare-sql',
      prepare: outboxkitPrepare,
      job: (url, count) => ({ kind: 'drain-bare', url, count, batch: 500, workers: 4 }),
    },
  ]
  if (full) {
    list.splice(5, 0, {
      id: 'graphile-worker-defaults',
      label: 'graphile-worker 0.18, defaults',
      settings: 'concurrentJobs 24, no local queue, no batched completion (first round only)',
      family: 'graphile-worker',
      maxRounds: 1,
      prepare: async (url, count) => {
        await resetGraphile(url)
        await loadGraphileBacklog(url, count)
      },
      job: (url, count) => ({ kind: 'drain-graphile', url, count, settings: GRAPHILE_DEFAULTS }),
    })
  }
  return list
}

/** One contender's drain rows over the rounds. */
export interface DrainRow {
  id: string
  label: string
  settings: string
  family: string
  rounds: (DrainResult & { peakRssMiB: number })[]
  medianPerSecond: number
  skipped?: string
}

/**
 * Scenario 1: each round runs every contender once, in turn, on the same backlog size; rounds
 * interleave so a burst of load from other work on the machine hits all contenders alike.
 */
export async function runDrain(
  url: string,
  count: number,
  rounds: number,
  full: boolean,
  log: (line: string) => void,
): Promise<DrainRow[]> {
  const contenders = drainContenders(full)
  const rows = new Map<string, DrainRow>()
  for (const c of contenders) {
    const skipped = c.available ? await c.available() : undefined
    rows.set(c.id, {
      id: c.id,
      label: c.label,
      settings: c.settings,
      family: c.family,
      rounds: [],
      medianPerSecond: 0,
      ...(skipped ? { skipped } : {}),
    })
    if (skipped) log(`  skip ${c.label}: ${skipped}`)
  }
  for (let r = 0; r < rounds; r++) {
    for (const c of contenders) {
      const row = rows.get(c.id)!
      if (row.skipped || (c.maxRounds !== undefined && r >= c.maxRounds)) continue
      await c.prepare(url, count)
      try {
        const out = await runChild<DrainResult>(c.job(url, count))
        row.rounds.push({ ...out.result, peakRssMiB: out.maxRssMiB })
        log(
          `  round ${r + 1} ${c.label}: ${Math.round(out.result.perSecond)} msg/s (${round(out.result.seconds)} s)`,
        )
      } catch (err) {
        row.skipped = (err as Error).message.split('\n').slice(0, 3).join(' ')
        log(`  ${c.label} failed: ${row.skipped}`)
      }
    }
  }
  for (const row of rows.values()) {
    row.medianPerSecond = round(median(row.rounds.map((x) => x.perSecond)), 0)
    for (const x of row.rounds) {
      x.perSecond = round(x.perSecond, 0)
      x.seconds = round(x.seconds, 3)
      x.cpuUserMs = round(x.cpuUserMs, 0)
      x.cpuSystemMs = round(x.cpuSystemMs, 0)
    }
  }
  return [...rows.values()]
}
