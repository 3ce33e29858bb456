import { runChild } from '../child-runner.js'
import { type DrainResult, loadOutboxBacklog, resetOutbox } from '../contenders/outboxkit.js'
import type { Job } from '../jobs.js'
import { loadAverage } from '../machine.js'
import { ensureBenchPgBouncer, stopBenchPgBouncer } from '../pgbouncer.js'
import { median, round } from '../stats.js'
import { resetTables } from './publish.js'
import type { PublishResult } from './publish-job.js'

/** Sizes of scenario 9. */
export interface PoolerOptions {
  rounds: number
  producers: number
  publishDurationMs: number
  publishWarmupMs: number
  backlog: number
}

type VariantId =
  | 'publish-direct'
  | 'publish-pooled'
  | 'publish-named'
  | 'drain-direct'
  | 'drain-pooled'
  | 'drain-named'

/** One variant of scenario 9 and its figures per round. */
export interface PoolerVariant {
  id: VariantId
  label: string
  unit: 'tx/s' | 'msg/s'
  /** tx/s or msg/s per round, in round order. */
  rates: number[]
  /** Publish: p50/p99 transaction ms, errors; drain: seconds and client CPU ms per 1k msg; per round. */
  details: string[]
  median: number
}

/** A ratio of two variants, computed within each round (both ran back to back). */
export interface PoolerRatio {
  label: string
  numerator: VariantId
  denominator: VariantId
  perRound: number[]
  median: number
}

/** Scenario 9's result (bench/results/*.json `pooler`). */
export interface PoolerResult {
  options: PoolerOptions
  /** The PgBouncer URL the pooled variants used, or why the scenario was skipped. */
  pgbouncer?: string
  skipped?: string
  /** Per round: the order the variants ran in, and the 1-minute load average at its start. */
  order: { round: number; load: number; ran: VariantId[] }[]
  variants: PoolerVariant[]
  ratios: PoolerRatio[]
}

const VARIANTS: Omit<PoolerVariant, 'rates' | 'details' | 'median'>[] = [
  { id: 'publish-direct', label: 'publish, direct, unnamed statements (default)', unit: 'tx/s' },
  { id: 'publish-pooled', label: 'publish, through PgBouncer, unnamed statements (default)', unit: 'tx/s' },
  { id: 'publish-named', label: 'publish, direct, pgPublisher({ preparedStatements: true })', unit: 'tx/s' },
  { id: 'drain-direct', label: 'drain, direct, pgBackend defaults (unnamed)', unit: 'msg/s' },
  { id: 'drain-pooled', label: 'drain, through PgBouncer, pgBackend defaults (unnamed)', unit: 'msg/s' },
  { id: 'drain-named', label: 'drain, direct, pgBackend({ preparedStatements: true })', unit: 'msg/s' },
]

const RATIOS: Omit<PoolerRatio, 'perRound' | 'median'>[] = [
  {
    label: 'publish: through PgBouncer / direct',
    numerator: 'publish-pooled',
    denominator: 'publish-direct',
  },
  { label: 'publish: named / unnamed (direct)', numerator: 'publish-named', denominator: 'publish-direct' },
  { label: 'drain: through PgBouncer / direct', numerator: 'drain-pooled', denominator: 'drain-direct' },
  { label: 'drain: named / unnamed (direct)', numerator: 'drain-named', denominator: 'drain-direct' },
]

/** Runs one variant once (tables reset on the direct `url`, untimed) and returns its rate and details. */
async function runVariant(
  id: VariantId,
  urls: { direct: string; pooled: string },
  o: PoolerOptions,
): Promise<{ rate: number; detail: string }> {
  const url = id.endsWith('-pooled') ? urls.pooled : urls.direct
  if (id.startsWith('publish-')) {
    await resetTables(urls.direct)
    const variant = id === 'publish-named' ? 'outboxkit-notify-named' : 'outboxkit-notify'
    const job: Job = {
      kind: 'publish',
      url,
      variant,
      producers: o.producers,
      durationMs: o.publishDurationMs,
      warmupMs: o.publishWarmupMs,
    }
    const r = (await runChild<PublishResult>(job)).result
    return {
      rate: r.tps,
      detail: `p50 ${r.txP50Ms} ms, p99 ${r.txP99Ms} ms${r.errors ? `, ${r.errors} errors` : ''}`,
    }
  }
  await resetOutbox(urls.direct)
  await loadOutboxBacklog(urls.direct, o.backlog)
  const job: Job = {
    kind: 'drain-outboxkit',
    url,
    driver: 'pg',
    count: o.backlog,
    relay: {},
    ...(id === 'drain-named' ? { preparedStatements: true } : {}),
  }
  const r = (await runChild<DrainResult>(job)).result
  const cpu = ((r.cpuUserMs + r.cpuSystemMs) / r.messages) * 1000
  return {
    rate: round(r.perSecond, 0),
    detail: `${round(r.seconds, 2)} s, ${round(cpu, 0)} ms CPU per 1k msg`,
  }
}

/** The variants of one kind in round `r`'s order: rotated by one each round, so drift favours none. */
function roundOrder(kind: 'publish' | 'drain', r: number): VariantId[] {
  const ids = VARIANTS.filter((v) => v.id.startsWith(`${kind}-`)).map((v) => v.id)
  return ids.map((_, i) => ids[(i + r) % ids.length]!)
}

/** Per-round and median ratios of the variants' rates. */
function ratiosOf(variants: PoolerVariant[]): PoolerRatio[] {
  const rates = (id: VariantId) => variants.find((v) => v.id === id)!.rates
  return RATIOS.map((spec) => {
    const num = rates(spec.numerator)
    const den = rates(spec.denominator)
    const perRound = num.map((n, i) => round(n / den[i]!, 3))
    return { ...spec, perRound, median: round(median(perRound), 3) }
  })
}

/**
 * Scenario 9: publish (closed-loop producers, `BEGIN; INSERT order; publish; COMMIT`, pg adapter)
 * and drain (a backlog, no-op handler) direct vs through a PgBouncer in transaction mode, and
 * named vs unnamed statements on direct connections. Every round runs all six variants, each in
 * its own child process, in an order rotated every round; the ratios are taken within each round.
 * Skipped, with the reason, when scripts/ensure-pgbouncer.sh cannot start a PgBouncer.
 */
export async function runPoolerScenario(
  url: string,
  o: PoolerOptions,
  log: (line: string) => void,
): Promise<PoolerResult> {
  const result: PoolerResult = { options: o, order: [], variants: [], ratios: [] }
  const bouncer = await ensureBenchPgBouncer(url)
  if ('skipped' in bouncer) {
    log(`  skip pooler: ${bouncer.skipped}`)
    return { ...result, skipped: bouncer.skipped }
  }
  log(`  PgBouncer (transaction mode, pool 3) at ${bouncer.url}`)
  const variants = VARIANTS.map((v): PoolerVariant => ({ ...v, rates: [], details: [], median: 0 }))
  try {
    for (let r = 0; r < o.rounds; r++) {
      const ran = [...roundOrder('publish', r), ...roundOrder('drain', r)]
      result.order.push({ round: r + 1, load: loadAverage()[0], ran })
      for (const id of ran) {
        const v = variants.find((x) => x.id === id)!
        const out = await runVariant(id, { direct: url, pooled: bouncer.url }, o)
        v.rates.push(out.rate)
        v.details.push(out.detail)
        log(`  round ${r + 1} ${v.label}: ${out.rate} ${v.unit} (${out.detail})`)
      }
    }
  } finally {
    stopBenchPgBouncer(bouncer.dir)
  }
  for (const v of variants) v.median = round(median(v.rates), 0)
  return { ...result, pgbouncer: bouncer.url, variants, ratios: ratiosOf(variants) }
}
