import { Logger, makeWorkerUtils, run, runMigrations } from 'graphile-worker'
import pg from 'pg'
import { sleep, waitUntil } from '../stats.js'
import { payloadFor } from '../workload.js'
import type { DrainResult } from './outboxkit.js'

/** graphile-worker's task name in the bench. */
export const GRAPHILE_TASK = 'order_created'

/** Settings of a graphile-worker runner in the bench. */
export interface GraphileSettings {
  concurrency: number
  localQueueSize?: number
  completeJobBatchDelay?: number
  maxPoolSize?: number
  pollInterval?: number
}

/** The configuration the issue names as graphile-worker's best documented settings. */
export const GRAPHILE_BEST: GraphileSettings = {
  concurrency: 24,
  localQueueSize: 500,
  completeJobBatchDelay: 0,
  maxPoolSize: 26,
}

/** graphile-worker on its defaults except concurrency (its default of 1 would be a straw man). */
export const GRAPHILE_DEFAULTS: GraphileSettings = { concurrency: 24 }

/** A logger that drops everything. */
export const silentLogger = new Logger(() => () => {})

/** Drops graphile-worker's schema and installs it again. */
export async function resetGraphile(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('DROP SCHEMA IF EXISTS graphile_worker CASCADE')
  } finally {
    await client.end()
  }
  await runMigrations({ connectionString: url, logger: silentLogger })
}

/** Loads `count` jobs with graphile-worker's own `addJobs` (chunks of 5 000), then ANALYZE. */
export async function loadGraphileBacklog(url: string, count: number): Promise<void> {
  const utils = await makeWorkerUtils({ connectionString: url, logger: silentLogger })
  try {
    const chunk = 5_000
    for (let from = 0; from < count; from += chunk) {
      const n = Math.min(chunk, count - from)
      await utils.addJobs(
        Array.from({ length: n }, (_, i) => ({ identifier: GRAPHILE_TASK, payload: payloadFor(from + i) })),
      )
    }
    await utils.withPgClient((c) => c.query('ANALYZE graphile_worker._private_jobs'))
  } finally {
    await utils.release()
  }
}

/** The `run()` options for `settings`. */
export function graphileRunOptions(url: string, settings: GraphileSettings) {
  const worker: Record<string, unknown> = {}
  if (settings.localQueueSize !== undefined) worker.localQueue = { size: settings.localQueueSize }
  if (settings.completeJobBatchDelay !== undefined) {
    worker.completeJobBatchDelay = settings.completeJobBatchDelay
    worker.failJobBatchDelay = settings.completeJobBatchDelay
  }
  return {
    connectionString: url,
    concurrency: settings.concurrency,
    noHandleSignals: true,
    logger: silentLogger,
    ...(settings.maxPoolSize ? { maxPoolSize: settings.maxPoolSize } : {}),
    ...(settings.pollInterval ? { pollInterval: settings.pollInterval } : {}),
    preset: { worker },
  }
}

/** Drains the backlog with graphile-worker and a no-op task; timed until the jobs table is empty. */
export async function drainGraphile(spec: {
  url: string
  count: number
  settings: GraphileSettings
}): Promise<DrainResult> {
  let handled = 0
  const check = new pg.Pool({ connectionString: spec.url, max: 1 })
  await check.query('SELECT 1')
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const runner = await run(graphileRunOptions(spec.url, spec.settings), {
    [GRAPHILE_TASK]: async () => {
      handled++
    },
  })
  await waitUntil('graphile-worker handlers', () => handled >= spec.count, 900_000, 2)
  await waitUntil(
    'graphile-worker completions',
    async () =>
      (await check.query('SELECT count(*)::int AS n FROM graphile_worker._private_jobs')).rows[0].n === 0,
    60_000,
    5,
  )
  const seconds = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  await runner.stop()
  await check.end()
  await sleep(0)
  return {
    messages: handled,
    seconds,
    perSecond: handled / seconds,
    cpuUserMs: cpu.user / 1000,
    cpuSystemMs: cpu.system / 1000,
  }
}
