/**
 * The long form of the chaos run (`pnpm soak` at the repository root). Parameters come from
 * environment variables; it prints progress, then a summary table, and exits 1 if the promise
 * was broken (lost, phantom, unexplained or same-attempt duplicates).
 *
 * | variable | default | meaning |
 * | --- | --- | --- |
 * | `DATABASE_URL` | local test server | PostgreSQL to run against |
 * | `SOAK_SECONDS` | 240 | how long producers run |
 * | `SOAK_RELAYS` | 3 | relay processes at once |
 * | `SOAK_PRODUCERS` | 4 | producer loops |
 * | `SOAK_KILL_EVERY_MS` | 2000-5000 | SIGKILL a random relay every (random in range) |
 * | `SOAK_FAIL_RATE` | 0.05 | handler throws |
 * | `SOAK_RETRY_RATE` | 0.03 | handler throws Retry |
 * | `SOAK_ROLLBACK_RATE` | 0.2 | transactions rolled back |
 * | `SOAK_LEASE_MS` | 3000 | relay lease |
 * | `SOAK_CONCURRENCY` | 10 | relay concurrency and batch size |
 * | `SOAK_SLEEP_MS` | 0-10 | handler sleep after its side effect |
 * | `SOAK_MAX_MESSAGES` | unlimited | stop producing after this many messages |
 * | `SOAK_MAX_BACKLOG` | 5000 | producers wait while more rows than this are live |
 * | `SOAK_KEEP_TABLES` | unset | `1` keeps the run's tables for inspection |
 *
 * @module
 */
import { runChaos } from './chaos.js'
import { formatChaosReport } from './report.js'
import { violations } from './verdict.js'

function num(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const v = Number(raw)
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a number >= 0, got ${raw}`)
  return v
}

function range(name: string, fallback: readonly [number, number]): readonly [number, number] {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const m = /^(\d+)(?:-(\d+))?$/.exec(raw)
  if (!m) throw new Error(`${name} must look like 2000 or 2000-5000, got ${raw}`)
  const a = Number(m[1])
  const b = m[2] === undefined ? a : Number(m[2])
  return [Math.min(a, b), Math.max(a, b)]
}

const seconds = num('SOAK_SECONDS', 240)
const started = Date.now()
const log = (line: string) =>
  console.log(`[soak ${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}`)
const params = {
  durationMs: seconds * 1000,
  messages: num('SOAK_MAX_MESSAGES', Number.MAX_SAFE_INTEGER),
  relays: num('SOAK_RELAYS', 3),
  producers: num('SOAK_PRODUCERS', 4),
  killEveryMs: range('SOAK_KILL_EVERY_MS', [2_000, 5_000]),
  failRate: num('SOAK_FAIL_RATE', 0.05),
  retryRate: num('SOAK_RETRY_RATE', 0.03),
  rollbackRate: num('SOAK_ROLLBACK_RATE', 0.2),
  leaseMs: num('SOAK_LEASE_MS', 3_000),
  concurrency: num('SOAK_CONCURRENCY', 10),
  sleepMs: range('SOAK_SLEEP_MS', [0, 10]),
  maxBacklog: num('SOAK_MAX_BACKLOG', 5_000),
  keepTables: process.env.SOAK_KEEP_TABLES === '1',
  drainTimeoutMs: 600_000,
}
log(
  `parameters: ${JSON.stringify({ ...params, messages: params.messages === Number.MAX_SAFE_INTEGER ? 'unlimited' : params.messages })}`,
)
const report = await runChaos({ ...params, log })
console.log(`\n${formatChaosReport(report)}\n`)
const broken = violations(report.verdict)
if (broken.length > 0) {
  console.log(`PROMISE BROKEN:\n- ${broken.join('\n- ')}`)
  process.exit(1)
}
console.log(
  'Promise kept: lost = 0, phantom = 0, every duplicate explained by a kill, a lease expiry or a fence.',
)
