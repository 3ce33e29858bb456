// Profiles core's relay draining a backlog with the given options (a quick look at where the
// client CPU goes). `tsx src/prototypes/profile-core.ts --count=50000 --relay='{"concurrency":400}'`
import { fileURLToPath } from 'node:url'
import { type DrainResult, loadOutboxBacklog, resetOutbox } from '../contenders/outboxkit.js'
import { benchUrl, ensureBenchDatabase } from '../db.js'
import { profiled, summarise } from '../profile.js'
import { round } from '../stats.js'

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await ensureBenchDatabase()
  const url = benchUrl()
  const count = Number(process.argv.find((a) => a.startsWith('--count='))?.slice(8) ?? 50_000)
  const relay = JSON.parse(process.argv.find((a) => a.startsWith('--relay='))?.slice(8) ?? '{}')
  await resetOutbox(url)
  await loadOutboxBacklog(url, count)
  const { result, profile } = await profiled<DrainResult>(
    { kind: 'drain-outboxkit', url, driver: 'pg', count, relay },
    '/tmp/outboxkit-bench-profiles/core',
  )
  const s = summarise(profile, 30)
  const pct = (t: number) => `${round((100 * t) / s.total, 1)} %`
  console.log(
    `${Math.round(result.perSecond)} msg/s; client CPU ${round((result.cpuUserMs + result.cpuSystemMs) / (result.messages / 1000), 0)} ms per 1k; ${JSON.stringify(result.statements)}; ${profile}`,
  )
  for (const [a, t] of s.areas.slice(0, 16)) console.log(`${pct(t).padStart(8)}  ${a}`)
  console.log('')
  for (const [f, t] of s.functions) console.log(`${pct(t).padStart(8)}  ${f}`)
}
