// Scenario 2: relays draining while producers commit and roll back, random handler failures,
// random relay kills and restarts. The long form is `pnpm soak` (src/soak.ts).
import { testDatabaseUrl } from '@outboxkit/conformance'
import { expect, test } from 'vitest'
import { runChaos } from '../src/chaos.js'
import { figuresLine, formatChaosReport, verdictFigures } from '../src/report.js'
import { explainedTotal, violations } from '../src/verdict.js'
import { expectNothingLostOrPhantom } from './support/verdict-checks.js'

test('chaos: producers commit and roll back while relays fail, retry, get killed and restart: lost = 0, phantom = 0', async () => {
  const report = await runChaos({
    url: testDatabaseUrl(),
    prefix: `okrel_chaos_ci_${process.pid}`,
    relays: 3,
    producers: 3,
    messages: Number(process.env.CHAOS_MESSAGES ?? 2_500),
    durationMs: 45_000,
    killEveryMs: [1_000, 2_000],
    minKills: 2,
    failRate: 0.05,
    retryRate: 0.03,
    rollbackRate: 0.2,
    leaseMs: 3_000,
    concurrency: 10,
    sleepMs: [0, 10],
    drainTimeoutMs: 90_000,
  })
  const v = report.verdict
  console.log(
    figuresLine('chaos-ci', {
      messages: v.committed + v.rolledBack,
      kills: report.kills,
      inFlightAtKills: report.inFlightAtKill,
      ...verdictFigures(v),
      seconds: (report.totalMs / 1000).toFixed(1),
    }),
  )
  console.log(formatChaosReport(report))
  expect(v.committed).toBeGreaterThan(500)
  expect(v.rolledBack).toBeGreaterThan(0)
  expect(report.kills).toBeGreaterThanOrEqual(2)
  expectNothingLostOrPhantom(v)
  expect(v.unexplained).toBe(0)
  expect(v.duplicates).toBeLessThanOrEqual(explainedTotal(v))
  expect(violations(v)).toEqual([])
}, 200_000)
