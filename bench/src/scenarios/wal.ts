// The WAL transport (docs/wal.md) side by side with the table, in one run on one database:
// publish tps with N producers (business only; + SELECT 1; + table publish; + WAL publish), in
// interleaved rounds; drain of a backlog (table relay on defaults, WAL relay, bare-SQL loop); and
// end-to-end latency at fixed rates (table vs WAL). The targets (issue 15): WAL publish >= 0.95x
// "business + SELECT 1"; WAL drain >= 1.5x the table relay; WAL p99 latency no worse than table.
import { randomUUID } from 'node:crypto'
import { createRelay, defineOutbox, migrate, type Outbox } from '@outboxkit/core'
import { walNames } from '@outboxkit/core/adapter'
import { pgBackend, publish, publishMany } from '@outboxkit/pg'
import pg from 'pg'
import { drainBareSql } from '../contenders/bare-sql.js'
import { percentile, round } from '../stats.js'
import { ORDER_INSERT, ORDERS_DDL, payloadFor, TOPIC } from '../workload.js'

/** What the WAL scenario measured. */
export interface WalBenchResult {
  publish: { variant: string; tps: number; ratioToSelect1: number }[]
  drain: { contender: string; perSecond: number; ratioToTable: number }[]
  latency: { rate: number; transport: string; p50Ms: number; p99Ms: number; delivered: number }[]
}

/** Options of {@link runWalScenario}. */
export interface WalScenarioOptions {
  producers: number
  publishMs: number
  rounds: number
  backlog: number
  rates: readonly number[]
  latencyMs: number
}

type Variant = 'business only' | '+ SELECT 1' | '+ table publish' | '+ WAL publish'
const VARIANTS: Variant[] = ['business only', '+ SELECT 1', '+ table publish', '+ WAL publish']

async function fresh(pool: pg.Pool, outbox: Outbox): Promise<void> {
  const { slot } = walNames(outbox.table)
  await pool.query(
    'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1',
    [slot],
  )
  await pool.query(`DROP TABLE IF EXISTS "${outbox.table.name}"`)
  await migrate(outbox, pgBackend({ pool }))
}

async function publishTps(
  pool: pg.Pool,
  variant: Variant,
  table: Outbox,
  wal: Outbox,
  o: WalScenarioOptions,
) {
  let n = 0
  const until = performance.now() + o.publishMs
  const producer = async (p: number) => {
    const client = await pool.connect()
    try {
      for (let seq = p; performance.now() < until; seq += o.producers) {
        await client.query('BEGIN')
        await client.query(ORDER_INSERT, [randomUUID(), `customer-${seq % 1000}`, 42.5])
        if (variant === '+ SELECT 1') await client.query('SELECT 1')
        else if (variant === '+ table publish')
          await publish(table, client, { topic: TOPIC, payload: payloadFor(seq) })
        else if (variant === '+ WAL publish')
          await publish(wal, client, { topic: TOPIC, payload: payloadFor(seq) })
        await client.query('COMMIT')
        n++
      }
    } finally {
      client.release()
    }
  }
  await Promise.all(Array.from({ length: o.producers }, (_, p) => producer(p)))
  return n / (o.publishMs / 1000)
}

async function seed(pool: pg.Pool, outbox: Outbox, count: number): Promise<void> {
  const client = await pool.connect()
  try {
    for (let i = 0; i < count; i += 500) {
      await client.query('BEGIN')
      const batch = Array.from({ length: Math.min(500, count - i) }, (_, j) => ({
        topic: TOPIC,
        payload: payloadFor(i + j),
      }))
      await publishMany(outbox, client, batch)
      await client.query('COMMIT')
    }
  } finally {
    client.release()
  }
}

async function drainRelay(url: string, outbox: Outbox, count: number): Promise<number> {
  let done = 0
  let finished!: () => void
  const all = new Promise<void>((r) => {
    finished = r
  })
  const relay = createRelay(outbox, {
    backend: pgBackend({ connectionString: url }),
    handlers: {
      [TOPIC]: async () => {
        if (++done === count) finished()
      },
    },
  })
  const t0 = performance.now()
  await relay.start()
  await all
  const seconds = (performance.now() - t0) / 1000
  await relay.stop()
  return count / seconds
}

async function latency(url: string, pool: pg.Pool, outbox: Outbox, rate: number, ms: number) {
  const lat: number[] = []
  const relay = createRelay(outbox, {
    backend: pgBackend({ connectionString: url }),
    handlers: { [TOPIC]: async (m) => void lat.push(Date.now() - (m.payload as { t: number }).t) },
  })
  await relay.start()
  const perTick = Math.max(1, Math.round(rate / 100))
  let sent = 0
  const t0 = Date.now()
  const inFlight: Promise<unknown>[] = []
  while (Date.now() - t0 < ms) {
    for (let i = 0; i < perTick; i++) {
      sent++
      inFlight.push(
        (async () => {
          const client = await pool.connect()
          try {
            await client.query('BEGIN')
            await publish(outbox, client, { topic: TOPIC, payload: { t: Date.now() } })
            await client.query('COMMIT')
          } finally {
            client.release()
          }
        })(),
      )
    }
    await new Promise((r) => setTimeout(r, 10))
  }
  await Promise.all(inFlight)
  const deadline = Date.now() + 30_000
  while (lat.length < sent && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  await relay.stop()
  lat.sort((a, b) => a - b)
  return { p50Ms: percentile(lat, 50), p99Ms: percentile(lat, 99), delivered: lat.length }
}

/** Runs the WAL scenario on `url` (needs wal_level = logical); logs a line per figure. */
export async function runWalScenario(
  url: string,
  o: WalScenarioOptions,
  log: (line: string) => void,
): Promise<WalBenchResult> {
  const pool = new pg.Pool({ connectionString: url, max: o.producers + 4 })
  await pool.query(ORDERS_DDL)
  const table = defineOutbox({ table: 'bench_wal_table', notify: false })
  const wal = defineOutbox({ table: 'bench_wal_wal', transport: 'wal' })
  const result: WalBenchResult = { publish: [], drain: [], latency: [] }
  try {
    await fresh(pool, table)
    await fresh(pool, wal)
    // A slot that nobody reads during the publish rounds keeps the WAL: confirm it away after.
    const tps = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]))
    for (let r = 0; r < o.rounds; r++) {
      for (const v of r % 2 === 0 ? VARIANTS : [...VARIANTS].reverse())
        tps.get(v)!.push(await publishTps(pool, v, table, wal, o))
    }
    const mean = (v: Variant) => tps.get(v)!.reduce((a, b) => a + b, 0) / o.rounds
    for (const v of VARIANTS) {
      result.publish.push({
        variant: v,
        tps: round(mean(v), 0),
        ratioToSelect1: round(mean(v) / mean('+ SELECT 1'), 3),
      })
      log(
        `  publish ${v.padEnd(16)} ${round(mean(v), 0)} tps  (${round(mean(v) / mean('+ SELECT 1'), 3)}x business + SELECT 1)`,
      )
    }
    // Drain: the same backlog in the table (table relay, bare SQL) and in the WAL (WAL relay).
    await fresh(pool, table)
    await fresh(pool, wal)
    await seed(pool, table, o.backlog)
    const tableRate = await drainRelay(url, table, o.backlog)
    await seed(pool, wal, o.backlog)
    const walRate = await drainRelay(url, wal, o.backlog)
    await fresh(pool, table)
    await seed(pool, table, o.backlog)
    const bare = await drainBareSql({
      url,
      count: o.backlog,
      batch: 500,
      workers: 4,
      table: 'bench_wal_table',
    })
    for (const [contender, rate] of [
      ['table relay (defaults)', tableRate],
      ['WAL relay (defaults)', walRate],
      ['bare SQL (4 loops, batch 500)', bare.perSecond],
    ] as const) {
      result.drain.push({ contender, perSecond: round(rate, 0), ratioToTable: round(rate / tableRate, 3) })
      log(
        `  drain ${o.backlog} ${contender.padEnd(30)} ${round(rate, 0)} msg/s  (${round(rate / tableRate, 3)}x table relay)`,
      )
    }
    for (const rate of o.rates) {
      for (const [transport, outbox] of [
        ['table', defineOutbox({ table: 'bench_wal_table' })],
        ['wal', wal],
      ] as const) {
        await fresh(pool, outbox)
        const l = await latency(url, pool, outbox, rate, o.latencyMs)
        result.latency.push({ rate, transport, ...l })
        log(
          `  latency ${rate}/s ${transport.padEnd(5)} p50 ${l.p50Ms} ms  p99 ${l.p99Ms} ms  (${l.delivered} delivered)`,
        )
      }
    }
  } finally {
    const { slot } = walNames(wal.table)
    await pool
      .query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1', [
        slot,
      ])
      .catch(() => {})
    await pool.query(`DROP PUBLICATION IF EXISTS "${slot}"`).catch(() => {})
    await pool.end()
  }
  return result
}
