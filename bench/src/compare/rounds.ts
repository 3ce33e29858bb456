import { type ChildOutcome, runChild } from '../child-runner.js'
import type { DrainResult } from '../contenders/outboxkit.js'
import { loadAverage } from '../machine.js'
import type { PublishResult } from '../scenarios/publish-job.js'
import { round } from '../stats.js'
import type { Build } from './builds.js'
import type { CompareJob } from './jobs.js'

/** Sizes of a comparison run. */
export interface CompareOptions {
  scenarios: ('drain' | 'publish')[]
  rounds: number
  /** Drain: backlog loaded before each drain. */
  backlog: number
  /** Publish: closed-loop producers, measured window and warm-up before it. */
  producers: number
  publishDurationMs: number
  publishWarmupMs: number
}

/** One build's figures in one round. */
export interface SideFigures {
  /** Drain msg/s or publish tx/s. */
  rate: number
  /** Drain: the relay process's CPU (user + system) ms per 1 000 messages. */
  cpuPer1k?: number
  /** Drain: claim statements per 1 000 messages. */
  claimsPer1k?: number
  /** Publish: transaction latency percentiles and failed transactions. */
  txP50Ms?: number
  txP99Ms?: number
  errors?: number
  /** The measured process's peak RSS. */
  peakRssMiB: number
}

/** One round of one scenario: both builds, in the order they ran. */
export interface RoundFigures {
  round: number
  order: Build['side'][]
  /** 1-minute load average when the round started. */
  load: number
  old: SideFigures
  new: SideFigures
  /** new / old of this round. */
  ratio: number
}

/** All rounds of the comparison, per scenario. */
export type CompareRounds = Partial<Record<'drain' | 'publish', RoundFigures[]>>

async function onBuild<T>(build: Build, job: CompareJob): Promise<ChildOutcome<T>> {
  return runChild<T, CompareJob>(job, { script: build.script })
}

async function drainOnce(build: Build, url: string, opts: CompareOptions): Promise<SideFigures> {
  await onBuild(build, { kind: 'prepare-drain', url, count: opts.backlog })
  const out = await onBuild<DrainResult>(build, { kind: 'drain', url, count: opts.backlog, relay: {} })
  const r = out.result
  const per1k = (v: number) => round((v / r.messages) * 1000, 1)
  return {
    rate: round(r.perSecond, 0),
    cpuPer1k: per1k(r.cpuUserMs + r.cpuSystemMs),
    claimsPer1k: per1k(r.statements?.claim ?? 0),
    peakRssMiB: out.maxRssMiB,
  }
}

async function publishOnce(build: Build, url: string, opts: CompareOptions): Promise<SideFigures> {
  await onBuild(build, { kind: 'prepare-publish', url })
  const out = await onBuild<PublishResult>(build, {
    kind: 'publish',
    url,
    producers: opts.producers,
    durationMs: opts.publishDurationMs,
    warmupMs: opts.publishWarmupMs,
  })
  const r = out.result
  return {
    rate: r.tps,
    txP50Ms: r.txP50Ms,
    txP99Ms: r.txP99Ms,
    errors: r.errors,
    peakRssMiB: out.maxRssMiB,
  }
}

/**
 * Runs every scenario for both builds, interleaved: each round runs the old build, then the new
 * (the order flips every round, so drift in the machine's load favours neither), each in its own
 * child process whose `@outboxkit/*` and `pg` resolve to that build. Every run first resets its
 * tables with its own build (migrate, publishMany), in a separate process that is not timed.
 */
export async function runRounds(
  builds: { old: Build; new: Build },
  url: string,
  opts: CompareOptions,
  log: (line: string) => void,
): Promise<CompareRounds> {
  const out: CompareRounds = {}
  const once = { drain: drainOnce, publish: publishOnce }
  for (let r = 0; r < opts.rounds; r++) {
    const order: Build['side'][] = r % 2 === 0 ? ['old', 'new'] : ['new', 'old']
    for (const scenario of opts.scenarios) {
      const load = loadAverage()[0]
      const figures: Partial<Record<Build['side'], SideFigures>> = {}
      for (const side of order) figures[side] = await once[scenario](builds[side], url, opts)
      const row: RoundFigures = {
        round: r + 1,
        order,
        load,
        old: figures.old!,
        new: figures.new!,
        ratio: round(figures.new!.rate / figures.old!.rate, 3),
      }
      out[scenario] = [...(out[scenario] ?? []), row]
      const unit = scenario === 'drain' ? 'msg/s' : 'tx/s'
      log(
        `  round ${row.round} ${scenario.padEnd(7)} old ${row.old.rate} ${unit}, new ${row.new.rate} ${unit}: new/old ${row.ratio.toFixed(3)}  (ran ${order.join(' then ')}, load ${load})`,
      )
    }
  }
  return out
}
