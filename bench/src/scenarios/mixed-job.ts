import { randomUUID } from 'node:crypto'
import { createRelay, defineOutbox } from '@outboxkit/core'
import { publish } from '@outboxkit/pg'
import pg from 'pg'
import { makeBackend } from '../contenders/outboxkit.js'
import type { Job } from '../jobs.js'
import { ORDER_INSERT, OUTBOX_TABLE, payloadFor, TOPIC } from '../workload.js'

/** A relay that runs until the parent says stop, reporting delivered counts periodically. */
export async function runRelay(
  job: Extract<Job, { kind: 'relay' }>,
  progress: (data: unknown) => void,
): Promise<{ delivered: number; claimed: number; errors: number; cpuMs: number }> {
  const outbox = defineOutbox({ table: OUTBOX_TABLE })
  const relay = createRelay(outbox, {
    backend: await makeBackend(job.driver, job.url),
    handlers: { [TOPIC]: () => {} },
    ...job.relay,
  })
  const stopped = new Promise<void>((resolve) =>
    process.on('message', (m: any) => {
      if (m?.type === 'stop') resolve()
    }),
  )
  const cpu0 = process.cpuUsage()
  await relay.start()
  const t0 = performance.now()
  const timer = setInterval(
    () => progress({ t: Math.round(performance.now() - t0), delivered: relay.stats.delivered }),
    job.reportEveryMs,
  )
  await stopped
  clearInterval(timer)
  await relay.stop()
  const cpu = process.cpuUsage(cpu0)
  process.removeAllListeners('message')
  return { ...relay.stats, cpuMs: (cpu.user + cpu.system) / 1000 }
}

/** Closed-loop producers (BEGIN; INSERT order; publish; COMMIT) for a fixed time, reporting commits. */
export async function runProducers(
  job: Extract<Job, { kind: 'produce' }>,
  progress: (data: unknown) => void,
): Promise<{ committed: number; seconds: number }> {
  const outbox = defineOutbox({ table: OUTBOX_TABLE, notify: job.notify })
  const pool = new pg.Pool({ connectionString: job.url, max: job.producers })
  pool.on('error', () => {})
  let committed = 0
  let seq = 0
  const t0 = performance.now()
  const end = t0 + job.durationMs
  const timer = setInterval(
    () => progress({ t: Math.round(performance.now() - t0), committed }),
    job.reportEveryMs,
  )
  await Promise.all(
    Array.from({ length: job.producers }, async () => {
      const client = await pool.connect()
      try {
        while (performance.now() < end) {
          const n = seq++
          await client.query('BEGIN')
          await client.query(ORDER_INSERT, [randomUUID(), `customer-${n % 1000}`, 42.5])
          await publish(outbox, client, { topic: TOPIC, payload: payloadFor(n) })
          await client.query('COMMIT')
          committed++
        }
      } finally {
        client.release()
      }
    }),
  )
  clearInterval(timer)
  const seconds = (performance.now() - t0) / 1000
  progress({ t: Math.round(seconds * 1000), committed })
  await pool.end()
  return { committed, seconds }
}
