import pg from 'pg'
import PgBoss from 'pg-boss'
import { waitUntil } from '../stats.js'
import { payloadFor } from '../workload.js'
import type { DrainResult } from './outboxkit.js'

/** pg-boss's queue name in the bench. */
export const BOSS_QUEUE = 'order_created'

/** Settings of pg-boss workers in the bench. */
export interface BossSettings {
  /** `boss.work()` calls (pg-boss 10 has no teamSize: each call is one fetch loop). */
  workers: number
  batchSize: number
  pollingIntervalSeconds: number
  max?: number
}

/**
 * The fastest pg-boss 10 settings found (see docs/performance.md): several work loops fetching
 * large batches at its minimum polling interval (0.5 s). A work loop only waits between fetches
 * when the previous fetch-and-handle took less than the interval, so throughput is roughly
 * workers × batchSize per 0.5 s until the fetch itself becomes the bottleneck.
 */
export const BOSS_BEST: BossSettings = { workers: 8, batchSize: 1_000, pollingIntervalSeconds: 0.5, max: 12 }

/** Creates a pg-boss instance without maintenance or cron, so nothing but the work runs. */
export function makeBoss(url: string, max = 10): PgBoss {
  const boss = new PgBoss({ connectionString: url, max, supervise: false, schedule: false })
  boss.on('error', () => {})
  return boss
}

/** Drops pg-boss's schema and installs it again, with the bench queue. */
export async function resetBoss(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('DROP SCHEMA IF EXISTS pgboss CASCADE')
  } finally {
    await client.end()
  }
  const boss = makeBoss(url, 2)
  await boss.start()
  await boss.createQueue(BOSS_QUEUE)
  await boss.stop({ graceful: false, wait: true })
}

/** Loads `count` jobs with pg-boss's own `insert` (chunks of 5 000), then ANALYZE. */
export async function loadBossBacklog(url: string, count: number): Promise<void> {
  const boss = makeBoss(url, 2)
  await boss.start()
  const chunk = 5_000
  for (let from = 0; from < count; from += chunk) {
    const n = Math.min(chunk, count - from)
    await boss.insert(Array.from({ length: n }, (_, i) => ({ name: BOSS_QUEUE, data: payloadFor(from + i) })))
  }
  await boss.stop({ graceful: false, wait: true })
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query('ANALYZE pgboss.job')
  await client.end()
}

/** Drains the backlog with pg-boss workers and a no-op handler; timed until every job is completed. */
export async function drainBoss(spec: {
  url: string
  count: number
  settings: BossSettings
}): Promise<DrainResult> {
  const boss = makeBoss(spec.url, spec.settings.max)
  await boss.start()
  const check = new pg.Pool({ connectionString: spec.url, max: 1 })
  await check.query('SELECT 1')
  let handled = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < spec.settings.workers; i++) {
    await boss.work(
      BOSS_QUEUE,
      { batchSize: spec.settings.batchSize, pollingIntervalSeconds: spec.settings.pollingIntervalSeconds },
      async (jobs) => {
        handled += jobs.length
      },
    )
  }
  await waitUntil('pg-boss handlers', () => handled >= spec.count, 1_800_000, 2)
  await waitUntil(
    'pg-boss completions',
    async () =>
      (
        await check.query(
          "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state < 'completed'",
          [BOSS_QUEUE],
        )
      ).rows[0].n === 0,
    60_000,
    5,
  )
  const seconds = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  await boss.stop({ graceful: false, wait: true })
  await check.end()
  return {
    messages: handled,
    seconds,
    perSecond: handled / seconds,
    cpuUserMs: cpu.user / 1000,
    cpuSystemMs: cpu.system / 1000,
  }
}
