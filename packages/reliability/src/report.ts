import type { ChaosReport } from './chaos.js'
import { explainedTotal, type Verdict } from './verdict.js'

/** One line of figures for a scenario, as printed by the tests and tabled in docs/reliability.md. */
export function figuresLine(scenario: string, figures: Record<string, unknown>): string {
  return `[reliability] ${scenario}: ${Object.entries(figures)
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(' ')}`
}

/** The message counts of a verdict: committed, rolled back, delivered, lost, phantom, duplicates. */
export function deliveryFigures(v: Verdict): Record<string, unknown> {
  return {
    committed: v.committed,
    rolledBack: v.rolledBack,
    delivered: v.delivered,
    lost: v.lost,
    phantom: v.phantom,
    duplicates: v.duplicates,
  }
}

/** The headline figures of a verdict: its {@link deliveryFigures}, then the explained duplicates. */
export function verdictFigures(v: Verdict): Record<string, unknown> {
  return { ...deliveryFigures(v), explained: explainedTotal(v), unexplained: v.unexplained }
}

/** A chaos report as a Markdown table plus a one-line verdict. */
export function formatChaosReport(report: ChaosReport): string {
  const v = report.verdict
  const p = report.producer
  const rows: [string, string][] = [
    [
      'duration (produce / drain / total)',
      `${s(report.produceMs)} / ${s(report.drainMs)} / ${s(report.totalMs)}`,
    ],
    ['relay processes (at once)', String(report.relays)],
    ['transactions (committed / rolled back)', `${p.committedTransactions} / ${p.rolledBackTransactions}`],
    ['messages committed', String(v.committed)],
    ['messages rolled back', String(v.rolledBack)],
    [
      'throughput (committed msg/s over produce+drain)',
      (v.committed / ((report.produceMs + report.drainMs) / 1000)).toFixed(0),
    ],
    ['relay kills (SIGKILL)', String(report.kills)],
    ['side effects in flight at the kills', String(report.inFlightAtKill)],
    ['attempts ended before any side effect (failures, Retries, kills)', String(v.attemptsWithoutEffect)],
    ['delivered (distinct)', String(v.delivered)],
    ['**lost**', `**${v.lost}**`],
    ['**phantom**', `**${v.phantom}**`],
    ['unknown ids delivered', String(v.unknown)],
    ['duplicates (extra side effects)', `${v.duplicates} on ${v.duplicatedMessages} messages`],
    ['explained duplicates budget', `${explainedTotal(v)} ${JSON.stringify(v.explained)}`],
    ['unexplained duplicates', String(v.unexplained)],
    ['same (message, attempt) handled twice', String(v.sameAttempt)],
    ['left live / dead', `${v.live} / ${v.dead}`],
    ['relay errors survived', JSON.stringify(report.relayErrors)],
  ]
  const width = Math.max(...rows.map((r) => r[0].length))
  return [
    `| ${'figure'.padEnd(width)} | value |`,
    `| ${'-'.repeat(width)} | ----- |`,
    ...rows.map(([k, val]) => `| ${k.padEnd(width)} | ${val} |`),
  ].join('\n')
}

function s(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`
}
