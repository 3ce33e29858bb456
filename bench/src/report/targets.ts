import type { BenchResults } from '../results.js'
import { round } from '../stats.js'

/** One target of issue 5, judged on this run. */
export interface TargetCheck {
  target: string
  measured: string
  met: boolean | undefined
}

const fmt = (n: number | undefined, digits = 2) =>
  n === undefined || !Number.isFinite(n) ? 'n/a' : String(round(n, digits))

/** Evaluates issue 5's targets against a run's results (undefined when the scenario did not run). */
export function checkTargets(r: BenchResults): TargetCheck[] {
  const checks: TargetCheck[] = []
  const drain = (id: string) => r.drain?.find((d) => d.id === id && !d.skipped)?.medianPerSecond
  const graphile = drain('graphile-worker-best')
  const bare = drain('bare-sql')
  for (const id of [
    'outboxkit-pg-defaults',
    'outboxkit-pg-tuned',
    'outboxkit-postgres-js-defaults',
    'outboxkit-postgres-js-tuned',
  ]) {
    const v = drain(id)
    if (v === undefined || graphile === undefined || bare === undefined) continue
    checks.push({
      target: `drain ${id.replace('outboxkit-', '')} ≥ 1.5 × graphile-worker best`,
      measured: `${fmt(v / graphile)} ×`,
      met: v / graphile >= 1.5,
    })
    checks.push({
      target: `drain ${id.replace('outboxkit-', '')} ≥ 0.7 × bare SQL`,
      measured: `${fmt(v / bare)} ×`,
      met: v / bare >= 0.7,
    })
  }
  const pub = (v: string) => r.publish?.find((p) => p.variant === v && !p.skipped)
  for (const v of [
    'outboxkit-notify',
    'outboxkit-no-notify',
    'pjs-outboxkit-notify',
    'pjs-outboxkit-no-notify',
  ]) {
    const row = pub(v)
    if (!row?.ratio) continue
    checks.push({
      target: `publish (${row.label}) ≥ 0.8 × business only`,
      measured: `${fmt(row.ratio)} ×`,
      met: row.ratio >= 0.8,
    })
  }
  const okNotify = pub('outboxkit-notify')?.medianTps
  const okQuiet = pub('outboxkit-no-notify')?.medianTps
  for (const [v, name] of [
    ['graphile-add-job', 'graphile-worker add_job'],
    ['pg-boss-send', 'pg-boss send'],
  ] as const) {
    const other = pub(v)?.medianTps
    if (!other) continue
    if (okNotify)
      checks.push({
        target: `publish (notify: true) ≥ ${name}`,
        measured: `${fmt(okNotify / other)} ×`,
        met: okNotify >= other,
      })
    if (okQuiet)
      checks.push({
        target: `publish (notify: false) ≥ ${name}`,
        measured: `${fmt(okQuiet / other)} ×`,
        met: okQuiet >= other,
      })
  }
  const lat = (c: string) => r.latency?.find((l) => l.contender === c && l.offeredRate === 1_000)
  const ok = lat('outboxkit')
  if (ok) {
    checks.push({ target: 'latency at 1k msg/s: p50 ≤ 3 ms', measured: `${ok.p50Ms} ms`, met: ok.p50Ms <= 3 })
    checks.push({
      target: 'latency at 1k msg/s: p99 ≤ 20 ms',
      measured: `${ok.p99Ms} ms`,
      met: ok.p99Ms <= 20,
    })
    const g = lat('graphile-best')
    if (g) {
      checks.push({
        target: 'latency at 1k msg/s below graphile-worker (p50 and p99)',
        measured: `p50 ${ok.p50Ms} vs ${g.p50Ms} ms, p99 ${ok.p99Ms} vs ${g.p99Ms} ms`,
        met: ok.p50Ms <= g.p50Ms && ok.p99Ms <= g.p99Ms,
      })
    }
  }
  const claims = r.growth?.claims
  if (claims) {
    const fresh = claims.find((c) => c.condition.startsWith('fresh, 10,000'))
    const dead = claims.find((c) => c.condition.includes('delivered and deleted'))
    if (fresh && dead) {
      checks.push({
        target: 'claim throughput after the big drain (dead tuples) ≥ 0.5 × fresh table',
        measured: `${fmt(dead.rowsPerSecond / fresh.rowsPerSecond)} × (${dead.rowsPerSecond} vs ${fresh.rowsPerSecond} rows/s)`,
        met: dead.rowsPerSecond / fresh.rowsPerSecond >= 0.5,
      })
      const vacuumed = claims.find((c) => c.condition.includes('after VACUUM'))
      if (vacuumed) {
        checks.push({
          target:
            'same, stricter: dead tuples ≥ 0.5 × the same table after VACUUM (core claim plan on a fresh 10k table is itself slow)',
          measured: `${fmt(dead.rowsPerSecond / vacuumed.rowsPerSecond)} × (${dead.rowsPerSecond} vs ${vacuumed.rowsPerSecond} rows/s)`,
          met: dead.rowsPerSecond / vacuumed.rowsPerSecond >= 0.5,
        })
      }
    }
  }
  if (r.memory) {
    checks.push({
      target: `peak RSS ≤ 150 MB draining ${r.memory.messages.toLocaleString('en')}`,
      measured: `${r.memory.peakRssMiB} MiB (of which ${r.memory.baselineRssMiB} MiB before the relay started)`,
      met: r.memory.peakRssMiB * 1.048576 <= 150,
    })
  }
  return checks
}
