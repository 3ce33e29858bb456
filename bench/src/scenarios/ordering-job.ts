import { randomUUID } from 'node:crypto'
import { createRelay, defineOutbox, type Outbox } from '@outboxkit/core'
import { publish } from '@outboxkit/pg'
import pg from 'pg'
import { type BenchRelayOptions, countStatements, makeBackend } from '../contenders/outboxkit.js'
import { percentile, round } from '../stats.js'
import { ORDER_INSERT, OUTBOX_TABLE, payloadFor, TOPIC } from '../workload.js'

/** The publish variants of the ordering scenario. */
export type OrderingPublishVariant = 'unordered' | 'ordered-distinct-keys' | 'ordered-hot-key'

/** What the ordering scenario runs in a child process: one relay, or the publish producers. */
export type OrderingJobSpec =
  | {
      mode: 'relay'
      url: string
      /** Whether {@link TOPIC} is in `orderedTopics` of the relay's outbox. */
      ordered: boolean
      relay: BenchRelayOptions
      /** How often the child reports its delivered count to the parent, in ms. */
      reportEveryMs: number
    }
  | {
      mode: 'publish'
      url: string
      variant: OrderingPublishVariant
      producers: number
      /** Distinct keys the `*-distinct-keys` and `unordered` variants cycle through. */
      keys: number
      durationMs: number
      warmupMs: number
    }

/** One relay child's outcome in a drain of the ordering scenario. */
export interface OrderingRelayResult {
  delivered: number
  cpuMs: number
  claims: number
  claimedRows: number
  errors: number
}

/** One publish variant's outcome. */
export interface OrderingPublishResult {
  variant: OrderingPublishVariant
  transactions: number
  seconds: number
  tps: number
  txP50Ms: number
  txP99Ms: number
  errors: number
}

/** The outbox of the ordering scenario: {@link TOPIC} ordered or not, NOTIFY off (the backlog is loaded first). */
export function orderingOutbox(ordered: boolean): Outbox {
  return defineOutbox({ table: OUTBOX_TABLE, notify: false, ...(ordered ? { orderedTopics: [TOPIC] } : {}) })
}

/** The key of message `seq` when messages are spread over `keys` keys. */
export const keyFor = (seq: number, keys: number) => `key-${seq % keys}`

/** Runs one child of the ordering scenario. */
export async function runOrderingJob(
  spec: OrderingJobSpec,
  progress: (data: unknown) => void,
): Promise<OrderingRelayResult | OrderingPublishResult> {
  return spec.mode === 'relay' ? runOrderingRelay(spec, progress) : runOrderingPublish(spec)
}

/**
 * A relay that warms its pool, reports `{ ready: true }`, starts on the parent's `go`, reports its
 * delivered count every `reportEveryMs` and stops on the parent's `stop`. The parent starts every
 * relay of a drain at once and stops the clock when their delivered counts add up to the backlog.
 */
async function runOrderingRelay(
  spec: Extract<OrderingJobSpec, { mode: 'relay' }>,
  progress: (data: unknown) => void,
): Promise<OrderingRelayResult> {
  const outbox = orderingOutbox(spec.ordered)
  const counted = countStatements(await makeBackend('pg', spec.url))
  const relay = createRelay(outbox, {
    backend: counted.backend,
    handlers: { [TOPIC]: () => {} },
    ...spec.relay,
  })
  let go!: () => void
  let stop!: () => void
  const started = new Promise<void>((resolve) => {
    go = resolve
  })
  const stopped = new Promise<void>((resolve) => {
    stop = resolve
  })
  process.on('message', (m: any) => {
    if (m?.type === 'go') go()
    else if (m?.type === 'stop') {
      // A stop before the go (another relay of the drain failed) ends the child too.
      go()
      stop()
    }
  })
  // Warm the pool and prepare the claim outside the timed section (same statement shape as the relay's).
  await counted.backend.claim({
    table: outbox.table,
    topics: ['warm-up'],
    limit: 1,
    leaseMs: 1,
    maxAttempts: 1,
    ...(spec.ordered ? { ordering: { continueAfterDead: [] } } : {}),
  })
  counted.reset()
  progress({ ready: true })
  await started
  const cpu0 = process.cpuUsage()
  await relay.start()
  const timer = setInterval(() => progress({ delivered: relay.stats.delivered }), spec.reportEveryMs)
  await stopped
  clearInterval(timer)
  await relay.stop()
  const cpu = process.cpuUsage(cpu0)
  process.removeAllListeners('message')
  return {
    delivered: relay.stats.delivered,
    cpuMs: (cpu.user + cpu.system) / 1000,
    claims: counted.counts.claim ?? 0,
    claimedRows: counted.counts.claimedRows ?? 0,
    errors: relay.stats.errors,
  }
}

/**
 * Closed-loop producers, each on its own connection: `BEGIN; INSERT order; publish; COMMIT` back to
 * back; counts the commits completed inside the window after the warm-up. `unordered` and
 * `ordered-distinct-keys` give transaction `seq` the key `key-(seq % keys)`, so concurrent
 * transactions never share a key; `ordered-hot-key` gives every transaction the same key.
 */
async function runOrderingPublish(
  spec: Extract<OrderingJobSpec, { mode: 'publish' }>,
): Promise<OrderingPublishResult> {
  const outbox = orderingOutbox(spec.variant !== 'unordered')
  const pool = new pg.Pool({ connectionString: spec.url, max: spec.producers })
  pool.on('error', () => {})
  const clients = await Promise.all(Array.from({ length: spec.producers }, () => pool.connect()))
  const key = (seq: number) => (spec.variant === 'ordered-hot-key' ? 'hot-key' : keyFor(seq, spec.keys))
  const start = performance.now()
  const windowStart = start + spec.warmupMs
  const windowEnd = windowStart + spec.durationMs
  const latencies: number[] = []
  let errors = 0
  let seq = 0
  await Promise.all(
    clients.map(async (client) => {
      for (;;) {
        const t = performance.now()
        if (t >= windowEnd) return
        const n = seq++
        try {
          await client.query('BEGIN')
          await client.query(ORDER_INSERT, [randomUUID(), `customer-${n % 1000}`, 42.5])
          await publish(outbox, client, { topic: TOPIC, key: key(n), payload: payloadFor(n) })
          await client.query('COMMIT')
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {})
          if (++errors <= 3) console.error(`[bench] ordering ${spec.variant}:`, (err as Error).message)
          continue
        }
        // Commits completed inside the window (not "started inside"): unbiased for long transactions.
        const done = performance.now()
        if (done >= windowStart && done <= windowEnd) latencies.push(done - t)
      }
    }),
  )
  for (const c of clients) c.release()
  await pool.end()
  return {
    variant: spec.variant,
    transactions: latencies.length,
    seconds: spec.durationMs / 1000,
    tps: round(latencies.length / (spec.durationMs / 1000), 1),
    txP50Ms: round(percentile(latencies, 50)),
    txP99Ms: round(percentile(latencies, 99)),
    errors,
  }
}
