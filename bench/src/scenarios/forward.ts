// Scenario 10: the forwarders against the bare broker clients. For each broker, a relay on its
// defaults drains an outbox backlog into the broker through the outboxkit forwarder, and the
// bare client publishes as many messages with confirmations; side by side in one run, each in
// its own child process, in an order rotated every round; a relay with a no-op handler runs
// alongside, the database side's own limit, the ratio taken within the round.
import { runChild } from '../child-runner.js'
import { loadOutboxBacklog, resetOutbox } from '../contenders/outboxkit.js'
import { loadAverage } from '../machine.js'
import { median, round } from '../stats.js'
import { BROKERS, type BrokerName } from './forward-brokers.js'
import type { ForwardContender, ForwardJobResult, ForwardJobSpec } from './forward-job.js'

/** Sizes of scenario 10. */
export interface ForwardOptions {
  /** Messages per drain and per bare loop. */
  count: number
  rounds: number
  /** Confirmations the bare client awaits at once (the relay's default concurrency). */
  window: number
  brokers: readonly BrokerName[]
  /** Write a CPU profile of each relay drain here (`<dir>/forward-<broker>-<round>.cpuprofile`). */
  profileDir?: string
}

/** One broker's figures. */
export interface ForwardBrokerResult {
  broker: BrokerName
  relay: ForwardJobResult[]
  bare: ForwardJobResult[]
  /** The same relay with a no-op handler: the database side's own limit in this round. */
  noop: ForwardJobResult[]
  /** relay msg/s / bare msg/s, per round. */
  ratios: number[]
  median: number
  /** relay msg/s / no-op relay msg/s, per round: what forwarding costs the drain. */
  vsNoop: number[]
  medianVsNoop: number
}

/** Scenario 10's result (bench/results/*.json `forward`). */
export interface ForwardResult {
  options: ForwardOptions
  order: { round: number; broker: BrokerName; load: number; ran: ForwardContender[] }[]
  brokers: ForwardBrokerResult[]
}

async function runOne(spec: ForwardJobSpec): Promise<ForwardJobResult> {
  if (spec.contender !== 'bare') {
    await resetOutbox(spec.url)
    await loadOutboxBacklog(spec.url, spec.count)
  }
  const r = (await runChild<ForwardJobResult>({ kind: 'forward', spec })).result
  if (r.stored !== spec.count)
    throw new Error(`bench forward: ${spec.broker} ${spec.contender} stored ${r.stored} of ${spec.count}`)
  return r
}

/** Runs scenario 10 on the bench database `url`. */
export async function runForwardScenario(
  url: string,
  o: ForwardOptions,
  log: (line: string) => void,
): Promise<ForwardResult> {
  const result: ForwardResult = { options: o, order: [], brokers: [] }
  for (const broker of o.brokers) {
    const b: ForwardBrokerResult = {
      broker,
      relay: [],
      bare: [],
      noop: [],
      ratios: [],
      median: 0,
      vsNoop: [],
      medianVsNoop: 0,
    }
    for (let r = 0; r < o.rounds; r++) {
      const all: ForwardContender[] = ['relay', 'bare', 'noop']
      const ran = all.map((_, i) => all[(i + r) % all.length]!)
      result.order.push({ round: r + 1, broker, load: loadAverage()[0], ran })
      for (const contender of ran) {
        const profileFile =
          contender === 'relay' && o.profileDir
            ? `${o.profileDir}/forward-${broker}-${r + 1}.cpuprofile`
            : undefined
        const spec: ForwardJobSpec = { contender, broker, url, count: o.count, window: o.window, profileFile }
        const out = await runOne(spec)
        b[contender].push(out)
        const cpu = round(((out.cpuUserMs + out.cpuSystemMs) / out.messages) * 1000, 0)
        log(
          `  ${broker} round ${r + 1} ${contender}: ${round(out.perSecond, 0)} msg/s (${round(out.seconds, 2)} s, ${cpu} ms CPU per 1k msg)`,
        )
      }
      b.ratios.push(round(b.relay[r]!.perSecond / b.bare[r]!.perSecond, 3))
      b.vsNoop.push(round(b.relay[r]!.perSecond / b.noop[r]!.perSecond, 3))
    }
    b.median = round(median(b.ratios), 3)
    b.medianVsNoop = round(median(b.vsNoop), 3)
    log(
      `  ${broker}: relay / bare ${b.median}x (per round ${b.ratios.join(', ')}); relay / no-op relay ${b.medianVsNoop}x (${b.vsNoop.join(', ')})`,
    )
    result.brokers.push(b)
  }
  return result
}

export { BROKERS }
