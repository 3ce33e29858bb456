import { randomUUID } from 'node:crypto'
import { defineOutbox } from '@outboxkit/core'
import { publish } from '@outboxkit/pg'
import pg from 'pg'
import type { Job } from '../jobs.js'
import { withProfile } from '../profiler.js'
import { percentile, round } from '../stats.js'
import { ORDER_INSERT, OUTBOX_TABLE, payloadFor, TOPIC } from '../workload.js'

/** Result of one publish variant. */
export interface PublishResult {
  variant: string
  transactions: number
  seconds: number
  tps: number
  txP50Ms: number
  txP99Ms: number
  errors: number
}

type PublishJob = Extract<Job, { kind: 'publish' }>

/** One transaction of a variant, on a connection the producer owns. */
type Step = (seq: number) => Promise<void>

async function pgSteps(
  job: PublishJob,
  pool: pg.Pool,
): Promise<{ make: () => Promise<Step>; end: () => Promise<void> }> {
  const outbox = defineOutbox({
    table: OUTBOX_TABLE,
    notify: job.variant === 'outboxkit-notify' || job.variant === 'outboxkit-notify-named',
  })
  // Loaded only by the variants that use them, so a variant's process holds only its own modules
  // (and `bench:compare` runs the outboxkit variants on builds that predate `@outboxkit/core/adapter`).
  const adapter = job.variant === 'ref-raw-statement' ? await import('@outboxkit/core/adapter') : undefined
  const named =
    job.variant === 'outboxkit-notify-named'
      ? (await import('@outboxkit/pg')).pgPublisher({ preparedStatements: true })
      : undefined
  const graphileTask =
    job.variant === 'graphile-add-job' ? (await import('../contenders/graphile.js')).GRAPHILE_TASK : ''
  let boss: { send: (...a: any[]) => Promise<unknown>; stop: (o: object) => Promise<void> } | undefined
  let bossQueue = ''
  if (job.variant === 'pg-boss-send') {
    const { makeBoss, BOSS_QUEUE } = await import('../contenders/pg-boss.js')
    boss = makeBoss(job.url, 2) as any
    await (boss as any).start()
    bossQueue = BOSS_QUEUE
  }
  const clients: pg.PoolClient[] = []
  const make = async () => {
    const client = await pool.connect()
    clients.push(client)
    const db = { executeSql: (text: string, values: unknown[]) => client.query(text, values) }
    return async (seq: number) => {
      await client.query('BEGIN')
      try {
        await client.query(ORDER_INSERT, [randomUUID(), `customer-${seq % 1000}`, 42.5])
        const payload = payloadFor(seq)
        switch (job.variant) {
          case 'outboxkit-notify':
          case 'outboxkit-no-notify':
            await publish(outbox, client, { topic: TOPIC, payload })
            break
          case 'outboxkit-notify-named':
            await named!.publish(outbox, client, { topic: TOPIC, payload })
            break
          case 'ref-raw-statement': {
            // Core's statement sent directly (unnamed, like the adapter), without the adapter's
            // publish() wrapper: isolates the wrapper's cost (checks, telemetry) from the SQL's.
            const prepared = await adapter!.prepareMessages(outbox, [{ topic: TOPIC, payload }], 'pg')
            const st = adapter!.postgresPublishStatement(outbox, prepared)
            await client.query(st.text, st.values)
            break
          }
          case 'ref-extra-select':
            await client.query('SELECT 1')
            break
          case 'ref-second-row':
            await client.query(ORDER_INSERT, [randomUUID(), `customer-${seq % 1000}`, 42.5])
            break
          case 'graphile-add-job':
            await client.query('SELECT graphile_worker.add_job($1, $2::json)', [
              graphileTask,
              JSON.stringify(payload),
            ])
            break
          case 'pg-boss-send':
            await boss!.send(bossQueue, payload, { db })
            break
        }
        await client.query('COMMIT')
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {})
        throw err
      }
    }
  }
  const end = async () => {
    for (const c of clients) c.release()
    await boss?.stop({ graceful: false, wait: true })
  }
  return { make, end }
}

async function pjsSteps(job: PublishJob): Promise<{ make: () => Promise<Step>; end: () => Promise<void> }> {
  const postgres = (await import('postgres')).default
  const { publish: pjsPublish } = await import('@outboxkit/postgres-js')
  const sql = postgres(job.url, { max: job.producers, onnotice: () => {} })
  const outbox = defineOutbox({ table: OUTBOX_TABLE, notify: job.variant === 'pjs-outboxkit-notify' })
  const withPublish = job.variant !== 'pjs-business-only'
  return {
    make: async () => async (seq: number) => {
      await sql.begin(async (tx) => {
        await tx.unsafe(ORDER_INSERT, [randomUUID(), `customer-${seq % 1000}`, 42.5], { prepare: true })
        if (withPublish) await pjsPublish(outbox, tx, { topic: TOPIC, payload: payloadFor(seq) })
      })
    },
    end: () => sql.end({ timeout: 5 }),
  }
}

/** Closed-loop producers: each runs its transaction back to back; counts commits in the window. */
export async function runPublish(job: PublishJob): Promise<PublishResult> {
  const pool = new pg.Pool({ connectionString: job.url, max: job.producers })
  pool.on('error', () => {})
  const { make, end } = job.variant.startsWith('pjs-') ? await pjsSteps(job) : await pgSteps(job, pool)
  const steps = await Promise.all(Array.from({ length: job.producers }, () => make()))
  return withProfile(job.profileFile, () => measure(job, steps, end, pool))
}

async function measure(
  job: PublishJob,
  steps: Step[],
  end: () => Promise<void>,
  pool: pg.Pool,
): Promise<PublishResult> {
  const start = performance.now()
  const windowStart = start + job.warmupMs
  const windowEnd = windowStart + job.durationMs
  const latencies: number[] = []
  let errors = 0
  let seq = 0
  await Promise.all(
    steps.map(async (step) => {
      for (;;) {
        const t = performance.now()
        if (t >= windowEnd) return
        try {
          await step(seq++)
        } catch (err) {
          if (++errors <= 3) console.error(`[bench] ${job.variant}:`, (err as Error).message)
          continue
        }
        const done = performance.now()
        if (t >= windowStart && done <= windowEnd) latencies.push(done - t)
      }
    }),
  )
  await end()
  await pool.end()
  return {
    variant: job.variant,
    transactions: latencies.length,
    seconds: job.durationMs / 1000,
    tps: round(latencies.length / (job.durationMs / 1000), 1),
    txP50Ms: round(percentile(latencies, 50)),
    txP99Ms: round(percentile(latencies, 99)),
    errors,
  }
}
