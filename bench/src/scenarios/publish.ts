import pg from 'pg'
import { runChild } from '../child-runner.js'
import { resetGraphile } from '../contenders/graphile.js'
import { resetOutbox } from '../contenders/outboxkit.js'
import { resetBoss } from '../contenders/pg-boss.js'
import type { PublishVariant } from '../jobs.js'
import { median, round } from '../stats.js'
import { ORDERS_DDL, ORDERS_TABLE } from '../workload.js'
import { postgresJsReady } from './drain.js'
import type { PublishResult } from './publish-job.js'

/** The variants of scenario 2 with a readable label; ratios are against `business-only` on the same driver. */
export const PUBLISH_VARIANTS: { variant: PublishVariant; label: string; baseline: PublishVariant }[] = [
  { variant: 'business-only', label: 'business only (pg)', baseline: 'business-only' },
  {
    variant: 'outboxkit-no-notify',
    label: 'outboxkit publish, notify: false (pg)',
    baseline: 'business-only',
  },
  {
    variant: 'outboxkit-notify',
    label: 'outboxkit publish, notify: true (default) (pg)',
    baseline: 'business-only',
  },
  { variant: 'graphile-add-job', label: 'graphile-worker add_job (pg)', baseline: 'business-only' },
  { variant: 'pg-boss-send', label: 'pg-boss send({ db }) (pg)', baseline: 'business-only' },
  {
    variant: 'ref-raw-statement',
    label:
      "reference: core's publish statement sent without the adapter's publish() wrapper, unnamed, notify: false (pg)",
    baseline: 'business-only',
  },
  {
    variant: 'ref-extra-select',
    label:
      'reference: business transaction plus one `SELECT 1` (the cost of one more round trip, nothing written)',
    baseline: 'business-only',
  },
  {
    variant: 'ref-second-row',
    label:
      'reference: business transaction plus a second order row (one more round trip and one more row: the floor for any separate INSERT)',
    baseline: 'business-only',
  },
  { variant: 'pjs-business-only', label: 'business only (postgres.js)', baseline: 'pjs-business-only' },
  {
    variant: 'pjs-outboxkit-no-notify',
    label: 'outboxkit publish, notify: false (postgres.js)',
    baseline: 'pjs-business-only',
  },
  {
    variant: 'pjs-outboxkit-notify',
    label: 'outboxkit publish, notify: true (postgres.js)',
    baseline: 'pjs-business-only',
  },
]

/** One variant's rows over the rounds. */
export interface PublishRow {
  variant: PublishVariant
  label: string
  baseline: PublishVariant
  rounds: PublishResult[]
  medianTps: number
  ratio?: number
  skipped?: string
}

/** Fresh business and outbox tables for a publish run (DROP and CREATE, then outboxkit's migrate). */
export async function resetTables(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query(`DROP TABLE IF EXISTS ${ORDERS_TABLE}`)
  await client.query(ORDERS_DDL)
  await client.end()
  await resetOutbox(url)
}

/** Scenario 2: closed-loop producers per variant, interleaved rounds, fresh tables before each run. */
export async function runPublishScenario(
  url: string,
  opts: { producers: number; durationMs: number; warmupMs: number; rounds: number },
  log: (line: string) => void,
): Promise<PublishRow[]> {
  await resetGraphile(url)
  await resetBoss(url)
  const pjs = await postgresJsReady()
  const rows = PUBLISH_VARIANTS.map(
    (v): PublishRow => ({
      ...v,
      rounds: [],
      medianTps: 0,
      ...(pjs && v.variant.startsWith('pjs-') ? { skipped: pjs } : {}),
    }),
  )
  for (let r = 0; r < opts.rounds; r++) {
    for (const row of rows) {
      if (row.skipped) continue
      await resetTables(url)
      try {
        const out = await runChild<PublishResult>({ kind: 'publish', url, variant: row.variant, ...opts })
        row.rounds.push(out.result)
        log(`  round ${r + 1} ${row.label}: ${Math.round(out.result.tps)} tps`)
      } catch (err) {
        row.skipped = (err as Error).message.split('\n').slice(0, 3).join(' ')
        log(`  ${row.label} failed: ${row.skipped}`)
      }
    }
  }
  for (const row of rows) row.medianTps = round(median(row.rounds.map((x) => x.tps)), 0)
  for (const row of rows) {
    const base = rows.find((b) => b.variant === row.baseline)
    if (base && base.medianTps > 0 && row.medianTps > 0) row.ratio = round(row.medianTps / base.medianTps, 2)
  }
  return rows
}
