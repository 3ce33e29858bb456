import type { MachineInfo } from '../machine.js'
import { median, round } from '../stats.js'
import type { Build } from './builds.js'
import type { CompareOptions, CompareRounds, RoundFigures, SideFigures } from './rounds.js'

/** The medians of one scenario over its rounds. */
export interface ScenarioSummary {
  scenario: 'drain' | 'publish'
  unit: 'msg/s' | 'tx/s'
  rounds: number
  oldMedian: number
  newMedian: number
  /** Median of the per-round new/old ratios (each round ran both builds back to back). */
  medianRatio: number
  minRatio: number
  maxRatio: number
}

/** Everything one `bench:compare` run records (bench/results/compare-*.json). */
export interface CompareResults {
  startedAt: string
  finishedAt: string
  machine: MachineInfo
  loadAverageStart: [number, number, number]
  loadAverageEnd: [number, number, number]
  builds: Record<Build['side'], Pick<Build, 'rev' | 'commit' | 'root'>>
  options: CompareOptions
  rounds: CompareRounds
  summary: ScenarioSummary[]
}

/** The medians and ratios of each scenario's rounds. */
export function summarise(rounds: CompareRounds): ScenarioSummary[] {
  return (['drain', 'publish'] as const).flatMap((scenario) => {
    const rows = rounds[scenario]
    if (!rows?.length) return []
    const ratios = rows.map((r) => r.ratio)
    return [
      {
        scenario,
        unit: scenario === 'drain' ? ('msg/s' as const) : ('tx/s' as const),
        rounds: rows.length,
        oldMedian: round(median(rows.map((r) => r.old.rate)), 0),
        newMedian: round(median(rows.map((r) => r.new.rate)), 0),
        medianRatio: round(median(ratios), 3),
        minRatio: Math.min(...ratios),
        maxRatio: Math.max(...ratios),
      },
    ]
  })
}

/** One line per scenario: the figure to quote. */
export function summaryLines(summary: ScenarioSummary[]): string[] {
  return summary.map(
    (s) =>
      `${s.scenario.padEnd(7)} new/old ${s.medianRatio.toFixed(3)} (median of ${s.rounds} rounds, range ${s.minRatio.toFixed(3)}–${s.maxRatio.toFixed(3)}); medians old ${s.oldMedian} ${s.unit}, new ${s.newMedian} ${s.unit}`,
  )
}

const extra = (scenario: 'drain' | 'publish', f: SideFigures) =>
  scenario === 'drain'
    ? `${f.cpuPer1k} ms CPU, ${f.claimsPer1k} claims per 1k msg`
    : `p50 ${f.txP50Ms} ms, p99 ${f.txP99Ms} ms${f.errors ? `, ${f.errors} errors` : ''}`

function roundRow(scenario: 'drain' | 'publish', r: RoundFigures): string {
  return `| ${r.round} | ${r.order.join(' → ')} | ${r.load} | ${r.old.rate} | ${r.new.rate} | ${r.ratio.toFixed(3)} | ${extra(scenario, r.old)} | ${extra(scenario, r.new)} |`
}

/** The comparison as a markdown page. */
export function renderCompareMarkdown(c: CompareResults): string {
  const m = c.machine
  const o = c.options
  const out = [
    `# outboxkit: ${c.builds.old.commit} (old) vs ${c.builds.new.commit} (new), side by side`,
    '',
    `${c.startedAt.slice(0, 16).replace('T', ' ')} UTC. Machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}, ${m.postgres}. Load average (1/5/15 min) at start ${c.loadAverageStart.join(' / ')}, at end ${c.loadAverageEnd.join(' / ')}: the machine is shared, so read the ratios (each round ran both builds back to back), not the absolute rates.`,
    '',
    `Old: \`${c.builds.old.rev}\` built in ${c.builds.old.root}. New: \`${c.builds.new.rev}\` built in ${c.builds.new.root}. Each run is a child process loading that tree's \`@outboxkit/core\` and \`@outboxkit/pg\` (their built \`dist/\`) and \`pg\`; the job code (bench/src/compare/jobs.ts) is the same for both.`,
    '',
    '| scenario | new / old (median of rounds) | range of rounds | old median | new median |',
    '|---|---:|---|---:|---:|',
    ...c.summary.map(
      (s) =>
        `| ${s.scenario} | ${s.medianRatio.toFixed(3)} × | ${s.minRatio.toFixed(3)}–${s.maxRatio.toFixed(3)} | ${s.oldMedian} ${s.unit} | ${s.newMedian} ${s.unit} |`,
    ),
  ]
  const sections = {
    drain: `Drain: ${o.backlog.toLocaleString('en')}-message backlog, no-op handler, relay on its defaults, pgBackend; msg/s until every settle committed.`,
    publish: `Publish: ${o.producers} closed-loop producers, \`BEGIN; INSERT order; publish (pg adapter, defaults: notify on); COMMIT\`, ${o.publishDurationMs / 1000} s window after ${o.publishWarmupMs / 1000} s warm-up; tx/s.`,
  }
  for (const scenario of ['drain', 'publish'] as const) {
    const rows = c.rounds[scenario]
    if (!rows?.length) continue
    const unit = scenario === 'drain' ? 'msg/s' : 'tx/s'
    out.push('', `## ${sections[scenario]}`, '')
    out.push(`| round | order | load (1 min) | old ${unit} | new ${unit} | new / old | old | new |`)
    out.push('|---:|---|---:|---:|---:|---:|---|---|')
    for (const r of rows) out.push(roundRow(scenario, r))
  }
  out.push('')
  return out.join('\n')
}
