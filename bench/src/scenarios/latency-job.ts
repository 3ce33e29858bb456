import { randomUUID } from 'node:crypto'
import { createRelay, defineOutbox } from '@outboxkit/core'
import { pgBackend, publish } from '@outboxkit/pg'
import pg from 'pg'
import type { Job } from '../jobs.js'
import { percentile, round, sleep, waitUntil } from '../stats.js'
import { ORDER_INSERT, OUTBOX_TABLE, payloadFor, TOPIC } from '../workload.js'

type LatencyJob = Extract<Job, { kind: 'latency' }>

/** Result of one latency run. */
export interface LatencyResult {
  contender: string
  offeredRate: number
  achievedRate: number
  messages: number
  delivered: number
  p50Ms: number
  p95Ms: number
  p99Ms: number
  maxMs: number
  /** Handler started before the producer saw its COMMIT acknowledged (counted as 0 ms). */
  beforeAck: number
  /** Scheduled transactions dropped because no producer connection was free before the window ended. */
  dropped: number
}

/**
 * Open-loop latency: transactions are started on a fixed schedule (`rate` per second) whatever
 * the consumer does; latency is from the producer seeing COMMIT acknowledged to the handler start,
 * both timestamps from this process's monotonic clock.
 */
export async function runLatency(job: LatencyJob): Promise<LatencyResult> {
  const total = Math.round((job.rate * job.durationMs) / 1000)
  const commitAt = new Float64Array(total).fill(Number.NaN)
  const startAt = new Float64Array(total).fill(Number.NaN)
  let delivered = 0
  const onMessage = (seq: number) => {
    if (seq >= 0 && seq < total && Number.isNaN(startAt[seq]!)) {
      startAt[seq] = performance.now()
      delivered++
    }
  }

  const isOutboxkit = job.contender.startsWith('outboxkit')
  const outbox = defineOutbox({ table: OUTBOX_TABLE, notify: job.contender !== 'outboxkit-no-notify' })
  let stopConsumer: () => Promise<void>
  if (isOutboxkit) {
    const relay = createRelay(outbox, {
      backend: pgBackend({ connectionString: job.url }),
      handlers: { [TOPIC]: (m) => onMessage((m.payload as { seq: number }).seq) },
    })
    await relay.start()
    stopConsumer = () => relay.stop()
  } else {
    const g = await import('../contenders/graphile.js')
    const settings = job.contender === 'graphile-best' ? g.GRAPHILE_BEST : g.GRAPHILE_DEFAULTS
    const { run } = await import('graphile-worker')
    const runner = await run(g.graphileRunOptions(job.url, settings), {
      [g.GRAPHILE_TASK]: async (payload) => onMessage((payload as { seq: number }).seq),
    })
    stopConsumer = () => runner.stop()
  }
  // Let the consumer settle into its idle state (first poll done, LISTEN established).
  await sleep(500)

  const pool = new pg.Pool({ connectionString: job.url, max: job.producers })
  pool.on('error', () => {})
  await Promise.all(Array.from({ length: job.producers }, () => pool.query('SELECT 1')))
  const { GRAPHILE_TASK } = await import('../contenders/graphile.js')
  let cutoff = false
  let skipped = 0
  const produce = async (seq: number) => {
    const client = await pool.connect()
    if (cutoff) {
      // Past the window: the offered load was more than the producers could commit; drop it.
      client.release()
      skipped++
      return
    }
    try {
      await client.query('BEGIN')
      await client.query(ORDER_INSERT, [randomUUID(), `customer-${seq % 1000}`, 42.5])
      if (isOutboxkit) await publish(outbox, client, { topic: TOPIC, payload: payloadFor(seq) })
      else
        await client.query('SELECT graphile_worker.add_job($1, $2::json)', [
          GRAPHILE_TASK,
          JSON.stringify(payloadFor(seq)),
        ])
      await client.query('COMMIT')
      commitAt[seq] = performance.now()
    } finally {
      client.release()
    }
  }
  const inflight: Promise<void>[] = []
  const t0 = performance.now()
  let sent = 0
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) * job.rate) / 1000) + 1)
    while (sent < due) inflight.push(produce(sent++))
    await sleep(1)
  }
  cutoff = true
  const produceSeconds = (performance.now() - t0) / 1000
  await Promise.all(inflight)
  const committed = total - skipped
  await waitUntil('every latency message to be handled', () => delivered >= committed, 60_000, 5).catch(
    () => {},
  )
  await stopConsumer()
  await pool.end()

  const latencies: number[] = []
  let beforeAck = 0
  for (let i = 0; i < total; i++) {
    const c = commitAt[i]!
    const s = startAt[i]!
    if (Number.isNaN(c) || Number.isNaN(s)) continue
    if (s < c) beforeAck++
    latencies.push(Math.max(0, s - c))
  }
  return {
    contender: job.contender,
    offeredRate: job.rate,
    achievedRate: round(committed / produceSeconds, 1),
    messages: committed,
    delivered,
    p50Ms: round(percentile(latencies, 50)),
    p95Ms: round(percentile(latencies, 95)),
    p99Ms: round(percentile(latencies, 99)),
    maxMs: round(percentile(latencies, 100)),
    beforeAck,
    dropped: skipped,
  }
}
