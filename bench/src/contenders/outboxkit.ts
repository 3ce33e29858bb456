import { createRelay, defineOutbox, type OutboxBackend, type RelayOptions } from '@outboxkit/core'
import { pgBackend, publishMany } from '@outboxkit/pg'
import pg from 'pg'
import { withProfile } from '../profiler.js'
import { sleep, waitUntil } from '../stats.js'
import { OUTBOX_TABLE, payloadFor, TOPIC } from '../workload.js'

/** Which outboxkit backend a job uses. */
export type OutboxkitDriver = 'pg' | 'postgres-js'

/** Relay options a bench job may set (everything else stays at outboxkit's defaults). */
export type BenchRelayOptions = Pick<
  RelayOptions<any>,
  'concurrency' | 'batchSize' | 'pollIntervalMs' | 'notify' | 'leaseMs'
>

/**
 * Builds the relay backend for `driver`. postgres.js is loaded lazily, so a missing or unfinished
 * `@outboxkit/postgres-js` only fails the postgres.js rows (the hook), never the pg ones.
 * `preparedStatements` (pg only) is passed to pgBackend only when set, so builds that predate the
 * option (`bench:compare`) still run.
 */
export async function makeBackend(
  driver: OutboxkitDriver,
  url: string,
  poolMax?: number,
  preparedStatements?: boolean,
): Promise<OutboxBackend> {
  if (driver === 'pg')
    return pgBackend({
      connectionString: url,
      ...(poolMax ? { max: poolMax } : {}),
      ...(preparedStatements === undefined ? {} : { preparedStatements }),
    })
  const mod = await import('@outboxkit/postgres-js')
  return mod.postgresJsBackend({ url, ...(poolMax ? { max: poolMax } : {}) })
}

/** Drops and recreates the outbox table through outboxkit's own `migrate`. */
export async function resetOutbox(url: string, table = OUTBOX_TABLE): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`DROP TABLE IF EXISTS ${table}`)
  } finally {
    await client.end()
  }
  const backend = pgBackend({ connectionString: url, max: 1 })
  const { migrate } = await import('@outboxkit/core')
  await migrate(defineOutbox({ table }), backend)
  await backend.close()
}

/** Loads `count` messages with outboxkit's own `publishMany` (chunks of 5 000 per transaction), then ANALYZE. */
export async function loadOutboxBacklog(
  url: string,
  count: number,
  table = OUTBOX_TABLE,
  analyze = true,
): Promise<void> {
  const outbox = defineOutbox({ table, notify: false })
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  const chunk = 5_000
  let next = 0
  const loader = async () => {
    const client = await pool.connect()
    try {
      while (next < count) {
        const from = next
        const n = Math.min(chunk, count - from)
        next += n
        const messages = Array.from({ length: n }, (_, i) => ({
          topic: TOPIC,
          payload: payloadFor(from + i),
        }))
        await client.query('BEGIN')
        await publishMany(outbox, client, messages)
        await client.query('COMMIT')
      }
    } finally {
      client.release()
    }
  }
  await Promise.all([loader(), loader()])
  if (analyze) await pool.query(`ANALYZE ${table}`)
  await pool.end()
}

/** Result of a drain job. */
export interface DrainResult {
  messages: number
  seconds: number
  perSecond: number
  cpuUserMs: number
  cpuSystemMs: number
  /** Statements sent to the database by the relay (claims, settles), when counted. */
  statements?: Record<string, number>
}

/** Drains the backlog with an outboxkit relay and a no-op handler; timed until every settle committed. */
export async function drainOutboxkit(spec: {
  url: string
  driver: OutboxkitDriver
  count: number
  relay: BenchRelayOptions
  poolMax?: number
  preparedStatements?: boolean
  table?: string
  profileFile?: string
}): Promise<DrainResult> {
  const outbox = defineOutbox({ table: spec.table ?? OUTBOX_TABLE })
  const backend = countStatements(
    await makeBackend(spec.driver, spec.url, spec.poolMax, spec.preparedStatements),
  )
  const relay = createRelay(outbox, {
    backend: backend.backend,
    handlers: { [TOPIC]: () => {} },
    ...spec.relay,
  })
  // Warm the pool outside the timed section, like the other contenders' start-up.
  await backend.backend.claim({
    table: outbox.table,
    topics: ['warm-up'],
    limit: 1,
    leaseMs: 1,
    maxAttempts: 1,
  })
  backend.reset()
  return withProfile(spec.profileFile, async () => {
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    await relay.start()
    await waitUntil('the outboxkit drain', () => relay.stats.delivered >= spec.count, 600_000, 2)
    const seconds = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    await relay.stop()
    await sleep(0)
    return {
      messages: relay.stats.delivered,
      seconds,
      perSecond: relay.stats.delivered / seconds,
      cpuUserMs: cpu.user / 1000,
      cpuSystemMs: cpu.system / 1000,
      statements: backend.counts,
    }
  })
}

/**
 * Wraps a backend to count the statements the relay sends (claim, settle, ...). Every other member
 * (optional capabilities included, whatever the build's `OutboxBackend` has) is forwarded unchanged,
 * so the wrapper never hides a method from the relay.
 */
export function countStatements(inner: OutboxBackend): {
  backend: OutboxBackend
  counts: Record<string, number>
  reset(): void
} {
  const counts: Record<string, number> = {}
  const bump = (k: string, n = 1) => {
    counts[k] = (counts[k] ?? 0) + n
  }
  const counted: Partial<OutboxBackend> = {
    async claim(req) {
      bump('claim')
      const rows = await inner.claim(req)
      bump('claimedRows', rows.length)
      return rows
    },
    async settle(req) {
      bump('settle')
      bump('settledRows', req.settlements.length)
      return inner.settle(req)
    },
  }
  const bound = new Map<PropertyKey, unknown>()
  const backend = new Proxy(inner, {
    get(target, prop) {
      if (prop in counted) return counted[prop as keyof OutboxBackend]
      const value = Reflect.get(target, prop, target)
      if (typeof value !== 'function') return value
      if (!bound.has(prop)) bound.set(prop, value.bind(target))
      return bound.get(prop)
    },
  })
  return {
    backend,
    counts,
    reset() {
      for (const k of Object.keys(counts)) delete counts[k]
    },
  }
}
