import type { PoolerResult } from '../scenarios/pooler.js'

/** Scenario 9 (through a pooler, named vs unnamed statements) as markdown lines. */
export function renderPoolerMarkdown(p: PoolerResult): string[] {
  const o = p.options
  const out = [
    `## 9. Through a pooler, and named vs unnamed statements (${o.rounds} interleaved round(s))`,
    '',
  ]
  if (p.skipped) return [...out, `Skipped: ${p.skipped}`]
  out.push(
    `Publish: ${o.producers} closed-loop producers, \`BEGIN; INSERT order; publish (pg adapter, notify on); COMMIT\`, ${o.publishDurationMs / 1000} s after ${o.publishWarmupMs / 1000} s warm-up. Drain: ${o.backlog.toLocaleString('en')}-message backlog, no-op handler, relay defaults, pgBackend (pool 10). PgBouncer: scripts/ensure-pgbouncer.sh (transaction mode, default_pool_size 3) in front of the same database. Each round runs every variant in its own process, in an order rotated every round; ratios are taken within a round.`,
    '',
    '| ratio | median of rounds | per round |',
    '|---|---:|---|',
    ...p.ratios.map(
      (r) => `| ${r.label} | ${r.median.toFixed(3)} × | ${r.perRound.map((x) => x.toFixed(3)).join(', ')} |`,
    ),
    '',
    '| variant | median | per round | details per round |',
    '|---|---:|---|---|',
    ...p.variants.map(
      (v) => `| ${v.label} | ${v.median} ${v.unit} | ${v.rates.join(', ')} | ${v.details.join('; ')} |`,
    ),
    '',
    ...p.order.map((r) => `- round ${r.round} (load ${r.load}): ${r.ran.join(' → ')}`),
  )
  return out
}
