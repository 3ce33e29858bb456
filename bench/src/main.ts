import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { benchConfig } from './config.js'
import { adminPool, BENCH_DATABASE, benchUrl, ensureBenchDatabase } from './db.js'
import { loadAverage, machineInfo } from './machine.js'
import { renderMarkdown } from './report/markdown.js'
import { renderDrainSvg, renderLatencySvg } from './report/svg.js'
import type { BenchResults } from './results.js'
import { runBackendsScenario } from './scenarios/backends.js'
import { RELAY_DEFAULTS, runDrain } from './scenarios/drain.js'
import { BROKERS, runForwardScenario } from './scenarios/forward.js'
import { runGrowthScenario } from './scenarios/growth.js'
import { runInboxScenario } from './scenarios/inbox.js'
import { runLatencyScenario } from './scenarios/latency.js'
import { runMixedScenario } from './scenarios/mixed.js'
import { runOrderingScenario } from './scenarios/ordering.js'
import { runPoolerScenario } from './scenarios/pooler.js'
import { runPublishScenario } from './scenarios/publish.js'
import { runWalScenario } from './scenarios/wal.js'

const args = process.argv.slice(2)
const quick = args.includes('--quick')
const onlyArg = args.find((a) => a.startsWith('--only='))
const only = onlyArg ? new Set(onlyArg.slice('--only='.length).split(',')) : undefined
const outArg = args.find((a) => a.startsWith('--out='))
const config = benchConfig(quick)
// --forward-count=N, --forward-rounds=N, --brokers=nats,redis: scenario 10 smaller, or on some brokers.
const numberArg = (name: string) => {
  const a = args.find((x) => x.startsWith(`--${name}=`))
  return a ? Number(a.slice(name.length + 3)) : undefined
}
config.forwardCount = numberArg('forward-count') ?? config.forwardCount
config.forwardRounds = numberArg('forward-rounds') ?? config.forwardRounds
const brokersArg = args.find((a) => a.startsWith('--brokers='))
const profileArg = args.find((a) => a.startsWith('--forward-profile='))
const wants = (s: string) => !only || only.has(s)
const log = (line: string) => console.log(line)

await ensureBenchDatabase()
const url = benchUrl()
const pool = adminPool()
const machine = await machineInfo(pool)
await pool.end()
const results: BenchResults = {
  meta: {
    mode: config.mode,
    startedAt: new Date().toISOString(),
    finishedAt: '',
    database: BENCH_DATABASE,
    machine,
    loadAverageStart: loadAverage(),
    loadAverageEnd: [0, 0, 0],
    config,
    scenarios: only
      ? [...only]
      : [
          'drain',
          'publish',
          'latency',
          'mixed',
          'growth',
          'ordering',
          'backends',
          'pooler',
          'forward',
          'inbox',
        ],
  },
}
log(
  `outboxkit bench (${config.mode}) on ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}, ${machine.postgres}`,
)
log(`load average at start: ${results.meta.loadAverageStart.join(' ')}; database ${BENCH_DATABASE}`)

if (wants('drain')) {
  log(
    `\n1. drain of ${config.drainBacklog.toLocaleString('en')} messages, no-op handler, ${config.drainRounds} round(s)`,
  )
  results.drain = await runDrain(url, config.drainBacklog, config.drainRounds, !quick, log)
}
if (wants('publish')) {
  log(`\n2. publish: ${config.publishProducers} producers, ${config.publishDurationMs / 1000} s per variant`)
  results.publish = await runPublishScenario(
    url,
    {
      producers: config.publishProducers,
      durationMs: config.publishDurationMs,
      warmupMs: config.publishWarmupMs,
      rounds: config.publishRounds,
    },
    log,
  )
}
if (wants('latency')) {
  log(`\n3. end-to-end latency, open loop, ${config.latencyDurationMs / 1000} s per rate`)
  results.latency = await runLatencyScenario(
    url,
    {
      rates: config.latencyRates,
      contenders: config.latencyContenders,
      durationMs: config.latencyDurationMs,
      producers: config.latencyProducers,
    },
    log,
  )
}
if (wants('mixed')) {
  log(
    `\n4. sustained mixed load, ${config.mixedDurationMs / 1000} s, ${config.mixedProducers} producers, two relays`,
  )
  results.mixed = [
    await runMixedScenario(
      url,
      {
        durationMs: config.mixedDurationMs,
        producers: config.mixedProducers,
        notify: true,
        relay: RELAY_DEFAULTS,
        label: 'defaults (notify: true)',
      },
      log,
    ),
  ]
  if (!quick) {
    results.mixed.push(
      await runMixedScenario(
        url,
        {
          durationMs: config.mixedDurationMs,
          producers: config.mixedProducers,
          notify: false,
          relay: RELAY_DEFAULTS,
          label: 'notify: false',
        },
        log,
      ),
    )
  }
}
if (wants('growth')) {
  log(`\n5-6. growth (claim cost) and memory`)
  const g = await runGrowthScenario(
    url,
    { sizes: config.growthSizes, staleSize: config.staleSize, deadSize: config.deadSize },
    log,
  )
  results.growth = { claims: g.claims, autovacuumSettings: g.autovacuum }
  results.memory = g.memory
}
if (wants('ordering')) {
  log(
    `\n7. ordering: ${config.orderingBacklog.toLocaleString('en')} messages over ${config.orderingKeys.toLocaleString('en')} keys, unordered vs ordered topic; publish with ${config.orderingProducers} producers`,
  )
  results.ordering = await runOrderingScenario(
    url,
    {
      backlog: config.orderingBacklog,
      keys: config.orderingKeys,
      relays: config.orderingRelays,
      drainRounds: config.orderingDrainRounds,
      producers: config.orderingProducers,
      publishDurationMs: config.orderingPublishDurationMs,
      publishWarmupMs: config.orderingPublishWarmupMs,
      publishRounds: config.orderingPublishRounds,
    },
    log,
  )
}
if (wants('backends')) {
  log(
    `\n8. backends: drain of ${config.backendsBacklog.toLocaleString('en')} messages, no-op handler, on PostgreSQL, MySQL/MariaDB and SQLite, ${config.backendsRounds} round(s)`,
  )
  results.backends = await runBackendsScenario(
    url,
    { backlog: config.backendsBacklog, rounds: config.backendsRounds },
    log,
  )
}
if (wants('pooler')) {
  log(
    `\n9. through a pooler, and named vs unnamed statements: publish (${config.publishProducers} producers, ${config.poolerPublishDurationMs / 1000} s) and drain (${config.poolerBacklog.toLocaleString('en')} messages), direct vs PgBouncer, ${config.poolerRounds} interleaved round(s)`,
  )
  results.pooler = await runPoolerScenario(
    url,
    {
      rounds: config.poolerRounds,
      producers: config.publishProducers,
      publishDurationMs: config.poolerPublishDurationMs,
      publishWarmupMs: config.poolerPublishWarmupMs,
      backlog: config.poolerBacklog,
    },
    log,
  )
}
if (wants('forward')) {
  const brokers = brokersArg ? (brokersArg.slice('--brokers='.length).split(',') as typeof BROKERS) : BROKERS
  log(
    `\n10. forwarders: ${config.forwardCount.toLocaleString('en')} messages into ${brokers.join(', ')}, relay on defaults vs the bare client, ${config.forwardRounds} round(s)`,
  )
  results.forward = await runForwardScenario(
    url,
    {
      count: config.forwardCount,
      rounds: config.forwardRounds,
      window: numberArg('forward-window') ?? 1_000,
      brokers,
      ...(profileArg ? { profileDir: profileArg.slice('--forward-profile='.length) } : {}),
    },
    log,
  )
}

// Only when asked (--only=wal): it needs wal_level = logical (docs/wal.md, scripts/ensure-wal.sh).
if (only?.has('wal')) {
  const o = quick
    ? { producers: 16, publishMs: 3_000, rounds: 2, backlog: 20_000, rates: [1_000], latencyMs: 5_000 }
    : {
        producers: 16,
        publishMs: 8_000,
        rounds: 3,
        backlog: 100_000,
        rates: [1_000, 5_000],
        latencyMs: 10_000,
      }
  log(
    `\n10. WAL transport vs table: publish (${o.producers} producers, ${o.publishMs / 1000} s, ${o.rounds} interleaved rounds), drain of ${o.backlog.toLocaleString('en')}, latency at ${o.rates.join(', ')} msg/s`,
  )
  results.wal = await runWalScenario(url, o, log)
}

if (wants('inbox')) {
  log(
    `\n10. inbox: a handler's transaction with processOnce vs without, 16 concurrent consumers, side by side`,
  )
  const inboxOptions = {
    consumers: 16,
    durationMs: quick ? 3_000 : 6_000,
    warmupMs: 1_000,
    rounds: quick ? 3 : 5,
  }
  results.inbox = [
    await runInboxScenario(url, 'minimal', inboxOptions, log),
    await runInboxScenario(url, 'typical', inboxOptions, log),
  ]
}

results.meta.finishedAt = new Date().toISOString()
results.meta.loadAverageEnd = loadAverage()
log(`\nload average at end: ${results.meta.loadAverageEnd.join(' ')}`)

const outDir = outArg ? outArg.slice('--out='.length) : fileURLToPath(new URL('../results/', import.meta.url))
mkdirSync(outDir, { recursive: true })
// latest.* is the last run of either mode; quick.* / full.* keep the last run of each mode.
for (const base of ['latest', config.mode]) {
  writeFileSync(`${outDir}/${base}.json`, `${JSON.stringify(results, null, 2)}\n`)
  writeFileSync(`${outDir}/${base}.md`, renderMarkdown(results))
  const suffix = base === 'latest' ? '' : `-${base}`
  if (results.drain) writeFileSync(`${outDir}/drain${suffix}.svg`, renderDrainSvg(results))
  if (results.latency) writeFileSync(`${outDir}/latency${suffix}.svg`, renderLatencySvg(results))
}
log(`\nwrote ${outDir}/latest.* and ${config.mode}.* (json, md, drain and latency svg)`)
console.log(`\n${renderMarkdown(results)}`)
