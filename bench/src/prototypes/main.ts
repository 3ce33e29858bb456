// PROTOTYPE matrix: core's relay vs the prototype's switches, on the same backlog, interleaved rounds.
// `pnpm --filter @outboxkit/bench run bench:prototypes [--count=30000] [--rounds=2]`
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { runChild } from '../child-runner.js'
import { GRAPHILE_BEST, loadGraphileBacklog, resetGraphile } from '../contenders/graphile.js'
import {
  type BenchRelayOptions,
  type DrainResult,
  loadOutboxBacklog,
  resetOutbox,
} from '../contenders/outboxkit.js'
import { benchUrl, ensureBenchDatabase } from '../db.js'
import type { Job } from '../jobs.js'
import { loadAverage } from '../machine.js'
import { median, round } from '../stats.js'
import type { ProtoOptions } from './relay.js'

const ALL: ProtoOptions = {
  minClaimFraction: 0.5,
  releaseOnHandlerEnd: true,
  lazySignal: true,
  batchLeaseTimer: true,
}

const PARALLEL: ProtoOptions = { ...ALL, parallelClaims: 4, parallelSettles: 2 }

/** A prototype drain job. */
function proto(relay: { concurrency?: number; batchSize?: number }, p: ProtoOptions, fastSettle: boolean) {
  return (url: string, count: number): Job => ({
    kind: 'drain-proto',
    url,
    count,
    relay,
    proto: p,
    claim: 'any-array',
    fastSettle,
  })
}

/** A core relay drain job with these options (any `RelayOptions`, passed through to the child). */
function core(relay: Record<string, unknown>) {
  return (url: string, count: number): Job => ({
    kind: 'drain-outboxkit',
    url,
    driver: 'pg',
    count,
    relay: relay as BenchRelayOptions,
  })
}

/**
 * `--set=core`: core's relay after the proposals moved into it, on its new defaults and other
 * settings, against the prototype, the old relay (the prototype with every switch off and core's
 * old claim: the relay loop before the change), graphile-worker's best and the bare-SQL limit.
 */
const CORE_SET: { id: string; job: (url: string, count: number) => Job }[] = [
  { id: 'core defaults', job: core({}) },
  {
    id: 'old relay, old defaults (50/100)',
    job: (url, count) => ({ kind: 'drain-proto', url, count, relay: {}, proto: {}, claim: 'core' }),
  },
  { id: 'core 50/100', job: core({ concurrency: 50, batchSize: 100 }) },
  { id: 'core 200/200', job: core({ concurrency: 200, batchSize: 200 }) },
  { id: 'core 400/200', job: core({ concurrency: 400, batchSize: 200 }) },
  { id: 'core 500/250', job: core({ concurrency: 500, batchSize: 250 }) },
  { id: 'core 600/200', job: core({ concurrency: 600, batchSize: 200 }) },
  { id: 'core 800/200', job: core({ concurrency: 800, batchSize: 200 }) },
  { id: 'core 900/300', job: core({ concurrency: 900, batchSize: 300 }) },
  {
    id: 'core 200/200 + maxPendingOutcomes 400',
    job: core({ concurrency: 200, batchSize: 200, maxPendingOutcomes: 400 }),
  },
  { id: 'core tuned (1000/500)', job: core({ concurrency: 1000, batchSize: 500 }) },
  { id: 'prototype (bench row)', job: proto({ concurrency: 200, batchSize: 200 }, ALL, true) },
  {
    id: 'graphile-worker best',
    job: (url, count) => ({ kind: 'drain-graphile', url, count, settings: GRAPHILE_BEST }),
  },
  {
    id: 'bare SQL (500 × 4)',
    job: (url, count) => ({ kind: 'drain-bare', url, count, batch: 500, workers: 4 }),
  },
]

/** The prototype variants measured against core (`--set=switches` for the one-switch-at-a-time set). */
export const VARIANTS: { id: string; job: (url: string, count: number) => Job }[] = process.argv.includes(
  '--set=core',
)
  ? CORE_SET
  : process.argv.includes('--set=parallel')
    ? [
        {
          id: 'core defaults (400/200)',
          job: (url, count) => ({ kind: 'drain-outboxkit', url, driver: 'pg', count, relay: {} }),
        },
        { id: 'proto 200/200 + all', job: proto({ concurrency: 200, batchSize: 200 }, ALL, false) },
        {
          id: 'proto 200/200 + all + fast settle',
          job: proto({ concurrency: 200, batchSize: 200 }, ALL, true),
        },
        {
          id: 'proto 200/200 + all + 2 claims',
          job: proto({ concurrency: 200, batchSize: 200 }, { ...ALL, parallelClaims: 2 }, false),
        },
        {
          id: 'proto 200/200 + all + 2 settles',
          job: proto({ concurrency: 200, batchSize: 200 }, { ...ALL, parallelSettles: 2 }, false),
        },
        { id: 'proto 1000/500 + all', job: proto({ concurrency: 1000, batchSize: 500 }, ALL, false) },
        {
          id: 'proto 1000/500 + all + 2 claims',
          job: proto({ concurrency: 1000, batchSize: 500 }, { ...ALL, parallelClaims: 2 }, false),
        },
        {
          id: 'proto 1000/500 + all + 2 settles + fast settle',
          job: proto({ concurrency: 1000, batchSize: 500 }, { ...ALL, parallelSettles: 2 }, true),
        },
        {
          id: 'core tuned (1000/500)',
          job: (url, count) => ({
            kind: 'drain-outboxkit',
            url,
            driver: 'pg',
            count,
            relay: { concurrency: 1000, batchSize: 500 },
          }),
        },
        {
          id: 'bare SQL (500 × 4)',
          job: (url, count) => ({ kind: 'drain-bare', url, count, batch: 500, workers: 4 }),
        },
      ]
    : process.argv.includes('--set=switches')
      ? [
          {
            id: 'core defaults (400/200)',
            job: (url, count) => ({ kind: 'drain-outboxkit', url, driver: 'pg', count, relay: {} }),
          },
          {
            id: 'proto defaults + fuller claims (minClaimFraction 0.5)',
            job: (url, count) => ({
              kind: 'drain-proto',
              url,
              count,
              relay: {},
              proto: { minClaimFraction: 0.5 },
              claim: 'core',
            }),
          },
          {
            id: 'proto defaults + release slot at handler end',
            job: (url, count) => ({
              kind: 'drain-proto',
              url,
              count,
              relay: {},
              proto: { releaseOnHandlerEnd: true },
              claim: 'core',
            }),
          },
          {
            id: 'proto defaults + lazy signal + batch lease timer',
            job: (url, count) => ({
              kind: 'drain-proto',
              url,
              count,
              relay: {},
              proto: { lazySignal: true, batchLeaseTimer: true },
              claim: 'core',
            }),
          },
          { id: 'proto defaults + any-array claim', job: proto({}, {}, false) },
          { id: 'proto defaults + all', job: proto({}, ALL, false) },
          {
            id: 'proto new defaults (200/200) + all',
            job: proto({ concurrency: 200, batchSize: 200 }, ALL, false),
          },
          {
            id: 'core tuned (1000/500)',
            job: (url, count) => ({
              kind: 'drain-outboxkit',
              url,
              driver: 'pg',
              count,
              relay: { concurrency: 1000, batchSize: 500 },
            }),
          },
          {
            id: 'proto tuned (1000/500) + all',
            job: proto({ concurrency: 1000, batchSize: 500 }, ALL, false),
          },
          {
            id: 'bare SQL (500 × 4)',
            job: (url, count) => ({ kind: 'drain-bare', url, count, batch: 500, workers: 4 }),
          },
        ]
      : [
          {
            id: 'core defaults (400/200)',
            job: (url, count) => ({ kind: 'drain-outboxkit', url, driver: 'pg', count, relay: {} }),
          },
          { id: 'proto 50/100 + all', job: proto({}, ALL, false) },
          {
            id: 'proto 50/100 + all + parallel claims/settles + fast settle',
            job: proto({}, PARALLEL, true),
          },
          {
            id: 'proto 200/100 + all + parallel + fast settle',
            job: proto({ concurrency: 200, batchSize: 100 }, PARALLEL, true),
          },
          {
            id: 'proto 200/200 + all + parallel + fast settle',
            job: proto({ concurrency: 200, batchSize: 200 }, PARALLEL, true),
          },
          {
            id: 'proto 500/250 + all + parallel + fast settle',
            job: proto({ concurrency: 500, batchSize: 250 }, PARALLEL, true),
          },
          {
            id: 'core tuned (1000/500)',
            job: (url, count) => ({
              kind: 'drain-outboxkit',
              url,
              driver: 'pg',
              count,
              relay: { concurrency: 1000, batchSize: 500 },
            }),
          },
          {
            id: 'proto 1000/500 + all + parallel + fast settle',
            job: proto({ concurrency: 1000, batchSize: 500 }, PARALLEL, true),
          },
          {
            id: 'graphile-worker best',
            job: (url, count) => ({ kind: 'drain-graphile', url, count, settings: GRAPHILE_BEST }),
          },
          {
            id: 'bare SQL (500 × 4)',
            job: (url, count) => ({ kind: 'drain-bare', url, count, batch: 500, workers: 4 }),
          },
        ]

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await ensureBenchDatabase()
  const url = benchUrl()
  const count = Number(process.argv.find((a) => a.startsWith('--count='))?.slice(8) ?? 30_000)
  const rounds = Number(process.argv.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 2)
  const only = process.argv.find((a) => a.startsWith('--only='))?.slice(7)
  const load0 = loadAverage()
  const results = new Map<string, DrainResult[]>()
  for (let r = 0; r < rounds; r++) {
    for (const v of VARIANTS) {
      if (only && !only.split(',').some((o) => v.id.includes(o))) continue
      if (v.id.startsWith('graphile')) {
        await resetGraphile(url)
        await loadGraphileBacklog(url, count)
      } else {
        await resetOutbox(url)
        await loadOutboxBacklog(url, count)
      }
      const out = await runChild<DrainResult>(v.job(url, count))
      const list = results.get(v.id) ?? []
      list.push(out.result)
      results.set(v.id, list)
      const st = out.result.statements ?? {}
      console.log(
        `round ${r + 1} ${v.id}: ${Math.round(out.result.perSecond)} msg/s, ${round((out.result.cpuUserMs + out.result.cpuSystemMs) / (count / 1000), 0)} CPU ms/1k, claims ${st.claim ?? '-'} settles ${st.settle ?? '-'}`,
      )
    }
  }
  const core = median((results.get(VARIANTS[0]!.id) ?? []).map((x) => x.perSecond))
  const lines = [
    `# Prototype matrix (${new Date().toISOString().slice(0, 16)} UTC, ${count.toLocaleString('en')} messages, ${rounds} rounds, load ${load0.join('/')} → ${loadAverage().join('/')})`,
    '',
    '| variant | msg/s (median) | vs core defaults | client CPU ms per 1k | claims per 1k | settles per 1k |',
    '|---|---:|---:|---:|---:|---:|',
  ]
  for (const [id, list] of results) {
    const m = median(list.map((x) => x.perSecond))
    const cpu = median(list.map((x) => (x.cpuUserMs + x.cpuSystemMs) / (x.messages / 1000)))
    const st = list[list.length - 1]!.statements ?? {}
    const per = (k: string) => (st[k] === undefined ? 'n/a' : String(round(st[k]! / (count / 1000), 1)))
    lines.push(
      `| ${id} | ${Math.round(m).toLocaleString('en')} | ${round(m / core, 2)} × | ${round(cpu, 0)} | ${per('claim')} | ${per('settle')} |`,
    )
  }
  const set = process.argv.includes('--set=core')
    ? 'prototypes-core'
    : process.argv.includes('--set=switches')
      ? 'prototypes-switches'
      : process.argv.includes('--set=parallel')
        ? 'prototypes-parallel'
        : 'prototypes'
  const out = fileURLToPath(new URL(`../../results/${set}.md`, import.meta.url))
  writeFileSync(out, `${lines.join('\n')}\n`)
  console.log(lines.join('\n'))
}
