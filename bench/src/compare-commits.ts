// `pnpm bench:compare <old-rev> [--new=<rev>]`: the drain and publish scenarios for two builds of
// outboxkit, side by side in one run (see docs/performance.md, "Comparing two commits").
import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type Build, prepareBuild } from './compare/builds.js'
import { type CompareResults, renderCompareMarkdown, summarise, summaryLines } from './compare/report.js'
import { type CompareOptions, runRounds } from './compare/rounds.js'
import { adminPool, BENCH_DATABASE, benchUrl, ensureBenchDatabase } from './db.js'
import { loadAverage, machineInfo } from './machine.js'

const USAGE = `usage: pnpm bench:compare <old-rev> [--new=<rev>] [--rounds=6] [--backlog=50000] [--producers=16]
                          [--publish-ms=5000] [--warmup-ms=1000] [--only=drain|publish]
                          [--dir=/tmp/outboxkit-compare] [--out=bench/results]
  <old-rev> is checked out into a git worktree under --dir, installed and built; the new side is
  the working tree as it is (built in place), or --new=<rev> in a worktree of its own.`

const args = process.argv.slice(2)
const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
const num = (name: string, fallback: number) => {
  const v = flag(name)
  const n = v === undefined ? fallback : Number(v)
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`bench:compare: --${name} must be a positive integer\n${USAGE}`)
  return n
}
const oldRev = args.find((a) => !a.startsWith('--'))
if (!oldRev || args.includes('--help')) {
  console.log(USAGE)
  process.exit(oldRev ? 0 : 1)
}
const only = flag('only')
if (only !== undefined && only !== 'drain' && only !== 'publish')
  throw new Error(`bench:compare: --only=${only}\n${USAGE}`)
const options: CompareOptions = {
  scenarios: only ? [only] : ['drain', 'publish'],
  rounds: num('rounds', 6),
  backlog: num('backlog', 50_000),
  producers: num('producers', 16),
  publishDurationMs: num('publish-ms', 5_000),
  publishWarmupMs: num('warmup-ms', 1_000),
}
const dir = flag('dir') ?? '/tmp/outboxkit-compare'
const outDir = (flag('out') ?? fileURLToPath(new URL('../results/', import.meta.url))).replace(/\/$/, '')
const log = (line: string) => console.log(line)

log(`bench:compare: preparing old = ${oldRev}, new = ${flag('new') ?? 'the working tree'}`)
const builds: Record<Build['side'], Build> = {
  old: await prepareBuild('old', oldRev, dir, log),
  new: await prepareBuild('new', flag('new') ?? 'working tree', dir, log),
}
await ensureBenchDatabase()
const url = benchUrl()
const pool = adminPool()
const machine = await machineInfo(pool)
await pool.end()
const startedAt = new Date().toISOString()
const loadAverageStart = loadAverage()
log(
  `\nold ${builds.old.commit} (${builds.old.root}) vs new ${builds.new.commit} (${builds.new.root}), database ${BENCH_DATABASE}`,
)
const each = {
  drain: `drain of ${options.backlog.toLocaleString('en')} (relay defaults, pg)`,
  publish: `publish with ${options.producers} producers for ${options.publishDurationMs / 1000} s (pg adapter)`,
}
log(
  `${options.rounds} rounds, each: ${options.scenarios.map((s) => each[s]).join(', ')}; load average ${loadAverageStart.join(' ')}`,
)
const rounds = await runRounds(builds, url, options, log)
const results: CompareResults = {
  startedAt,
  finishedAt: new Date().toISOString(),
  machine,
  loadAverageStart,
  loadAverageEnd: loadAverage(),
  builds: {
    old: { rev: builds.old.rev, commit: builds.old.commit, root: builds.old.root },
    new: { rev: builds.new.rev, commit: builds.new.commit, root: builds.new.root },
  },
  options,
  rounds,
  summary: summarise(rounds),
}
log(`\nload average at end: ${results.loadAverageEnd.join(' ')}`)
for (const line of summaryLines(results.summary)) log(line)
const base = `${outDir}/compare-${builds.old.commit.slice(0, 7)}-${builds.new.commit.slice(0, 7)}`
mkdirSync(outDir, { recursive: true })
writeFileSync(`${base}.json`, `${JSON.stringify(results, null, 2)}\n`)
writeFileSync(`${base}.md`, renderCompareMarkdown(results))
log(`wrote ${base}.md and .json`)
