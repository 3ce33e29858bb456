import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { runChild } from './child-runner.js'
import { type DrainResult, loadOutboxBacklog, resetOutbox } from './contenders/outboxkit.js'
import { benchUrl, ensureBenchDatabase } from './db.js'
import type { Job } from './jobs.js'
import { RELAY_DEFAULTS, RELAY_TUNED } from './scenarios/drain.js'
import type { PublishResult } from './scenarios/publish-job.js'
import { round } from './stats.js'

/**
 * CPU profiles of outboxkit's drain (defaults and tuned) and publish, summarised by self time per
 * function and per area (pg driver, outboxkit, Node internals, GC). `pnpm --filter @outboxkit/bench
 * run bench:profile [--count=50000] [--out=bench/results/profile.md]`.
 */
interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount: number
  children?: number[]
}

function area(url: string, fn: string): string {
  if (fn === '(garbage collector)') return 'GC'
  if (fn === '(idle)' || fn === '(program)') return fn
  if (url.includes('/packages/core/src/telemetry')) return 'outboxkit core: telemetry'
  if (url.includes('/packages/core/')) return 'outboxkit core'
  if (url.includes('/packages/pg/')) return 'outboxkit pg adapter'
  if (url.includes('/packages/postgres-js/')) return 'outboxkit postgres-js adapter'
  if (url.includes('/pg-protocol/')) return 'pg-protocol (wire parsing)'
  if (url.includes('/pg-types/') || url.includes('/postgres-array/') || url.includes('/postgres-date/'))
    return 'pg-types (value parsing)'
  if (url.includes('/node_modules/pg/')) return 'pg (client, query objects)'
  if (url.includes('/postgres/')) return 'postgres.js'
  if (url.includes('/uuidv7/')) return 'uuidv7'
  if (url.includes('/bench/src/')) return 'bench harness'
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`
  if (fn && !url) return `native: ${fn}`
  return url.includes('node_modules') ? url.replace(/.*node_modules\//, '').split('/')[0]! : url || '(native)'
}

/** Summarises a .cpuprofile: top functions and areas by self time (idle excluded). */
export function summarise(
  path: string,
  top = 20,
): { total: number; areas: [string, number][]; functions: [string, number][] } {
  const prof = JSON.parse(readFileSync(path, 'utf8')) as {
    nodes: Node[]
    samples: number[]
    timeDeltas: number[]
  }
  const self = new Map<number, number>()
  prof.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0))
  })
  const byFn = new Map<string, number>()
  const byArea = new Map<string, number>()
  let total = 0
  for (const node of prof.nodes) {
    const t = self.get(node.id) ?? 0
    if (!t) continue
    const { functionName, url, lineNumber } = node.callFrame
    if (functionName === '(idle)') continue
    total += t
    const short = url
      .replace(/^file:\/\/\/work\/main\//, '')
      .replace(/.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, '')
    const key = `${functionName || '(anonymous)'} ${short}:${lineNumber + 1}`
    byFn.set(key, (byFn.get(key) ?? 0) + t)
    const a = area(url, functionName)
    byArea.set(a, (byArea.get(a) ?? 0) + t)
  }
  const sort = (m: Map<string, number>) => [...m.entries()].sort((a, b) => b[1] - a[1])
  return { total, areas: sort(byArea), functions: sort(byFn).slice(0, top) }
}

/** Runs a job whose measured section is profiled (see profiler.ts) and returns the profile path. */
export async function profiled<T>(job: Job, dir: string): Promise<{ result: T; profile: string }> {
  mkdirSync(dir, { recursive: true })
  const profile = `${dir}/${job.kind}-${Date.now()}.cpuprofile`
  const out = await runChild<T>({ ...job, profileFile: profile } as Job)
  return { result: out.result, profile }
}

function render(title: string, s: ReturnType<typeof summarise>, extra: string): string {
  const pct = (t: number) => `${round((100 * t) / s.total, 1)} %`
  const lines = [`### ${title}`, '', extra, '', '| area | self time |', '|---|---:|']
  for (const [a, t] of s.areas.slice(0, 14)) lines.push(`| ${a} | ${pct(t)} |`)
  lines.push('', '| function | self time |', '|---|---:|')
  for (const [f, t] of s.functions) lines.push(`| \`${f.replace(/\|/g, '\\|')}\` | ${pct(t)} |`)
  return lines.join('\n')
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await ensureBenchDatabase()
  const url = benchUrl()
  const count = Number(process.argv.find((a) => a.startsWith('--count='))?.slice(8) ?? 50_000)
  const tmp = '/tmp/outboxkit-bench-profiles'
  const sections: string[] = [
    `# CPU profiles (${new Date().toISOString().slice(0, 16)} UTC, ${count.toLocaleString('en')} messages)`,
    '',
  ]
  for (const [name, relay] of [
    ['defaults', RELAY_DEFAULTS],
    ['tuned', RELAY_TUNED],
  ] as const) {
    await resetOutbox(url)
    await loadOutboxBacklog(url, count)
    const { result, profile } = await profiled<DrainResult>(
      { kind: 'drain-outboxkit', url, driver: 'pg', count, relay },
      `${tmp}/drain-${name}`,
    )
    const st = result.statements ?? {}
    sections.push(
      render(
        `Drain, relay ${name} (pg)`,
        summarise(profile),
        `${Math.round(result.perSecond)} msg/s; client CPU ${round((result.cpuUserMs + result.cpuSystemMs) / (result.messages / 1000), 0)} ms per 1k messages; ${st.claim} claims (${round((st.claimedRows ?? 0) / (st.claim ?? 1), 1)} rows each), ${st.settle} settles (${round((st.settledRows ?? 0) / (st.settle ?? 1), 1)} rows each).`,
      ),
      '',
    )
    console.log(`drain ${name}: ${Math.round(result.perSecond)} msg/s, profile ${profile}`)
  }
  await resetOutbox(url)
  const { result, profile } = await profiled<PublishResult>(
    {
      kind: 'publish',
      url,
      variant: 'outboxkit-no-notify',
      producers: 16,
      durationMs: 8_000,
      warmupMs: 1_000,
    },
    `${tmp}/publish`,
  )
  sections.push(
    render('Publish, notify: false, 16 producers (pg)', summarise(profile), `${result.tps} tps.`),
    '',
  )
  const outFile =
    process.argv.find((a) => a.startsWith('--out='))?.slice(6) ??
    fileURLToPath(new URL('../results/profile.md', import.meta.url))
  writeFileSync(outFile, `${sections.join('\n')}\n`)
  console.log(sections.join('\n'))
}
