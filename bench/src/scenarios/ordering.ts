import { publishMany } from '@outboxkit/pg'
import pg from 'pg'
import { type ChildOutcome, runChild } from '../child-runner.js'
import { type BenchRelayOptions, resetOutbox } from '../contenders/outboxkit.js'
import { median, round } from '../stats.js'
import { ORDERS_DDL, ORDERS_TABLE, OUTBOX_TABLE, payloadFor, TOPIC } from '../workload.js'
import { RELAY_DEFAULTS } from './drain.js'
import {
  keyFor,
  type OrderingPublishResult,
  type OrderingPublishVariant,
  type OrderingRelayResult,
  orderingOutbox,
} from './ordering-job.js'

/** Options of scenario 7. */
export interface OrderingOptions {
  /** Messages of the drain backlog, spread round-robin over `keys` keys. */
  backlog: number
  keys: number
  /** Relay counts to drain with (each relay in its own process), e.g. `[1, 2]`. */
  relays: number[]
  drainRounds: number
  producers: number
  publishDurationMs: number
  publishWarmupMs: number
  publishRounds: number
}

/** One drain (one variant, one round). */
export interface OrderingDrainRun {
  messages: number
  seconds: number
  perSecond: number
  /** Claim statements of all relays together, and the rows they returned. */
  claims: number
  claimedRows: number
  /** CPU of all relay processes together, in ms. */
  relayCpuMs: number
  peakRssMiB: number
}

/** One side (unordered or ordered) of a drain pair over the rounds. */
export interface OrderingDrainSide {
  rounds: OrderingDrainRun[]
  medianPerSecond: number
}

/** Unordered vs ordered drains with the same relay count and settings, run side by side. */
export interface OrderingDrainPair {
  relays: number
  settings: string
  unordered: OrderingDrainSide
  ordered: OrderingDrainSide
  /** The median of {@link roundRatios}: ordered / unordered, measured side by side. */
  ratio?: number
  /** Ordered / unordered within each round (the two ran back to back). */
  roundRatios: number[]
  skipped?: string
}

/** One publish variant over the rounds. */
export interface OrderingPublishRow {
  variant: OrderingPublishVariant
  label: string
  rounds: OrderingPublishResult[]
  medianTps: number
  /** The median of {@link roundRatios}. */
  ratio?: number
  /** This variant's tx/s / the `unordered` variant's tx/s of the same round. */
  roundRatios: number[]
  skipped?: string
}

/** Scenario 7's result in latest.json. */
export interface OrderingResult {
  keys: number
  backlog: number
  producers: number
  drain: OrderingDrainPair[]
  publish: OrderingPublishRow[]
}

/** The publish variants of scenario 7, in run order. */
export const ORDERING_PUBLISH_VARIANTS: { variant: OrderingPublishVariant; label: string }[] = [
  { variant: 'unordered', label: 'unordered topic' },
  { variant: 'ordered-distinct-keys', label: 'ordered topic, distinct keys' },
  { variant: 'ordered-hot-key', label: 'ordered topic, all producers on one key' },
]

const RELAY: BenchRelayOptions = RELAY_DEFAULTS
const RELAY_SETTINGS = "core's relay defaults, pool 10 (per relay)"
const DRAIN_TIMEOUT_MS = 600_000

/**
 * Loads `count` messages, message `i` with key `key-(i % keys)`, through outboxkit's own
 * `publishMany` (1 000 per transaction, one connection), then ANALYZE. With `ordered`, the topic is
 * ordered, so the rows are numbered (`seq`) and each key's messages form a queue.
 */
async function loadKeyedBacklog(url: string, count: number, keys: number, ordered: boolean): Promise<void> {
  const outbox = orderingOutbox(ordered)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const chunk = 1_000
    for (let from = 0; from < count; from += chunk) {
      const n = Math.min(chunk, count - from)
      const messages = Array.from({ length: n }, (_, i) => ({
        topic: TOPIC,
        key: keyFor(from + i, keys),
        payload: payloadFor(from + i),
      }))
      await client.query('BEGIN')
      await publishMany(outbox, client, messages)
      await client.query('COMMIT')
    }
    await client.query(`ANALYZE ${OUTBOX_TABLE}`)
  } finally {
    await client.end()
  }
}

/**
 * Drains a backlog with `relays` relay processes started at the same instant. The relays start up
 * (and warm their pools) while `load` writes the backlog; the clock runs from the parent's `go`,
 * once both are done, until the relays' reported delivered counts (committed settles) add up to
 * `count`. Each child reports every 10 ms, so the clock is late by at most that much.
 */
async function drainWithRelays(
  url: string,
  count: number,
  relays: number,
  ordered: boolean,
  load: () => Promise<void>,
): Promise<OrderingDrainRun> {
  const delivered = new Array<number>(relays).fill(0)
  const sends: ((m: unknown) => void)[] = []
  let ready = 0
  let onReady!: () => void
  let onDone!: (t: number) => void
  const allReady = new Promise<void>((resolve) => {
    onReady = resolve
  })
  const allDone = new Promise<number>((resolve) => {
    onDone = resolve
  })
  let t0 = 0
  let finished = false
  const children = Array.from({ length: relays }, (_, i) =>
    runChild<OrderingRelayResult>(
      { kind: 'ordering', spec: { mode: 'relay', url, ordered, relay: RELAY, reportEveryMs: 10 } },
      {
        onProgress: (p: any) => {
          if (p?.ready && ++ready === relays) onReady()
          if (typeof p?.delivered !== 'number') return
          delivered[i] = p.delivered
          if (!finished && delivered.reduce((a, b) => a + b, 0) >= count) {
            finished = true
            onDone(performance.now())
          }
        },
        control: (send) => sends.push(send),
      },
    ),
  )
  // A child that exits before the drain is over (an error) ends the wait instead of hanging it.
  const early = Promise.all(children).then(
    () => {
      throw new Error('a relay process exited before the backlog was drained')
    },
    (err: Error) => {
      throw err
    },
  )
  early.catch(() => {})
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`bench: the ordering drain did not finish in ${DRAIN_TIMEOUT_MS} ms`)),
      DRAIN_TIMEOUT_MS,
    )
  })
  let t1: number
  try {
    await Promise.race([Promise.all([allReady, load()]), early, timeout])
    t0 = performance.now()
    for (const send of sends) send({ type: 'go' })
    t1 = await Promise.race([allDone, early, timeout])
  } finally {
    clearTimeout(timer)
    for (const send of sends) send({ type: 'stop' })
    // Never leave a relay running into the next variant, whatever happened.
    await Promise.allSettled(children)
  }
  const outs: ChildOutcome<OrderingRelayResult>[] = await Promise.all(children)
  const errors = outs.reduce((a, o) => a + o.result.errors, 0)
  if (errors > 0) throw new Error(`bench: the relays reported ${errors} error(s) during the ordering drain`)
  const seconds = (t1 - t0) / 1000
  return {
    messages: count,
    seconds: round(seconds, 3),
    perSecond: round(count / seconds, 0),
    claims: outs.reduce((a, o) => a + o.result.claims, 0),
    claimedRows: outs.reduce((a, o) => a + o.result.claimedRows, 0),
    relayCpuMs: round(
      outs.reduce((a, o) => a + o.result.cpuMs, 0),
      0,
    ),
    peakRssMiB: Math.max(...outs.map((o) => o.maxRssMiB)),
  }
}

/** Rows of the outbox that are not delivered yet (a drain must leave none). */
async function undelivered(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query(
      `SELECT count(*)::int AS n FROM ${OUTBOX_TABLE} WHERE state <> 'delivered'`,
    )
    return rows[0].n
  } finally {
    await client.end()
  }
}

/**
 * Scenario 7 (issue 6): what per-key ordering costs. (a) The same backlog spread over `keys` keys,
 * drained by the same relay settings on an unordered topic and on an `orderedTopics` topic, back to
 * back in each round (which one goes first alternates by round), with 1 and 2 relays. (b) Publish throughput of `producers` closed-loop
 * producers on an unordered topic, an ordered topic with distinct keys, and an ordered topic with
 * every producer on one key. Rounds interleave the variants, so load from other work on the
 * machine hits them alike; the ratios are within a round.
 */
export async function runOrderingScenario(
  url: string,
  opts: OrderingOptions,
  log: (line: string) => void,
): Promise<OrderingResult> {
  const pairs: OrderingDrainPair[] = opts.relays.map((relays) => ({
    relays,
    settings: RELAY_SETTINGS,
    unordered: { rounds: [], medianPerSecond: 0 },
    ordered: { rounds: [], medianPerSecond: 0 },
    roundRatios: [],
  }))
  for (let r = 0; r < opts.drainRounds; r++) {
    for (const pair of pairs) {
      if (pair.skipped) continue
      const runs: Partial<Record<'unordered' | 'ordered', OrderingDrainRun>> = {}
      // Alternate which side runs first, so neither always inherits the other's autovacuum or cache.
      const sides = r % 2 === 0 ? (['unordered', 'ordered'] as const) : (['ordered', 'unordered'] as const)
      for (const side of sides) {
        try {
          const ordered = side === 'ordered'
          await resetOutbox(url)
          const run = await drainWithRelays(url, opts.backlog, pair.relays, ordered, () =>
            loadKeyedBacklog(url, opts.backlog, opts.keys, ordered),
          )
          const left = await undelivered(url)
          if (left > 0) throw new Error(`bench: ${left} message(s) left undelivered after the drain`)
          runs[side] = run
          pair[side].rounds.push(run)
          log(
            `  round ${r + 1}, ${pair.relays} relay(s), ${side}: ${run.perSecond} msg/s (${run.seconds} s, ${run.claims} claims)`,
          )
        } catch (err) {
          pair.skipped = (err as Error).message.split('\n').slice(0, 3).join(' ')
          log(`  ${pair.relays} relay(s), ${side} failed: ${pair.skipped}`)
          break
        }
      }
      if (runs.unordered && runs.ordered) {
        pair.roundRatios.push(round(runs.ordered.perSecond / runs.unordered.perSecond, 2))
      }
    }
  }
  for (const pair of pairs) {
    for (const side of [pair.unordered, pair.ordered]) {
      side.medianPerSecond = round(median(side.rounds.map((x) => x.perSecond)), 0)
    }
    if (pair.roundRatios.length > 0) pair.ratio = round(median(pair.roundRatios), 2)
  }

  const rows = ORDERING_PUBLISH_VARIANTS.map(
    (v): OrderingPublishRow => ({ ...v, rounds: [], medianTps: 0, roundRatios: [] }),
  )
  for (let r = 0; r < opts.publishRounds; r++) {
    const tps = new Map<OrderingPublishVariant, number>()
    for (const row of rows) {
      if (row.skipped) continue
      try {
        await resetPublishTables(url)
        const out = await runChild<OrderingPublishResult>({
          kind: 'ordering',
          spec: {
            mode: 'publish',
            url,
            variant: row.variant,
            producers: opts.producers,
            keys: opts.keys,
            durationMs: opts.publishDurationMs,
            warmupMs: opts.publishWarmupMs,
          },
        })
        if (out.result.errors > 0) {
          throw new Error(`bench: ${out.result.errors} transaction(s) failed in ${row.variant}`)
        }
        row.rounds.push(out.result)
        tps.set(row.variant, out.result.tps)
        log(`  round ${r + 1} publish, ${row.label}: ${Math.round(out.result.tps)} tx/s`)
      } catch (err) {
        row.skipped = (err as Error).message.split('\n').slice(0, 3).join(' ')
        log(`  publish, ${row.label} failed: ${row.skipped}`)
      }
    }
    const base = tps.get('unordered')
    for (const row of rows) {
      const v = tps.get(row.variant)
      if (base && v) row.roundRatios.push(round(v / base, 2))
    }
  }
  for (const row of rows) {
    row.medianTps = round(median(row.rounds.map((x) => x.tps)), 0)
    if (row.roundRatios.length > 0) row.ratio = round(median(row.roundRatios), 2)
  }
  await resetOutbox(url)
  return { keys: opts.keys, backlog: opts.backlog, producers: opts.producers, drain: pairs, publish: rows }
}

async function resetPublishTables(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`DROP TABLE IF EXISTS ${ORDERS_TABLE}`)
    await client.query(ORDERS_DDL)
  } finally {
    await client.end()
  }
  await resetOutbox(url)
}
