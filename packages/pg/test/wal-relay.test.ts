import {
  deferred,
  dropWalOutbox,
  inPgTransaction,
  testDatabaseUrl,
  uniqueTableName,
  waitFor,
} from '@outboxkit/conformance'
import {
  Cancel,
  createRelay,
  type DeliveredMessage,
  defineOutbox,
  type HandlerContext,
  isOutboxError,
  migrate,
  type Outbox,
  type OutboxBackend,
  type OutboxError,
  type Relay,
} from '@outboxkit/core'
import { walNames } from '@outboxkit/core/adapter'
import { pgBackend, publish, publishMany } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

// The WAL transport (docs/wal.md) on the real server: publish into the WAL, the relay reads the
// outbox's replication slot. Asserted through SQL on a pool of the test's own.

const skipped = process.env.OUTBOXKIT_WAL_SKIPPED
let pool: pg.Pool
const outboxes: Outbox[] = []
const relays: Relay[] = []
const backends: OutboxBackend[] = []

function backend(): OutboxBackend {
  const b = pgBackend({ connectionString: testDatabaseUrl() })
  backends.push(b)
  return b
}

async function walOutbox(options: { orderedTopics?: string[] } = {}): Promise<Outbox> {
  const outbox = defineOutbox({ table: uniqueTableName('wal'), transport: 'wal', ...options })
  outboxes.push(outbox)
  await migrate(outbox, backend())
  return outbox
}

function relay(
  outbox: Outbox,
  handlers: Record<string, (m: DeliveredMessage, context: HandlerContext) => Promise<void>>,
  extra = {},
): Relay {
  const r = createRelay(outbox, { backend: backend(), handlers, pollIntervalMs: 100, ...extra })
  relays.push(r)
  return r
}

async function rows(outbox: Outbox): Promise<Record<string, unknown>[]> {
  const r = await pool.query(
    `SELECT id::text, topic, state, attempts, last_error FROM "${outbox.table.name}" ORDER BY created_at`,
  )
  return r.rows
}

beforeAll(() => {
  pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 10 })
})

// Each test's relays stop and its slots go after the test: the server's few replication slots are
// shared with the other test files running at once.
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.stop({ graceMs: 100 }).catch(() => {})))
  for (const outbox of outboxes.splice(0)) await dropWalOutbox(pool, outbox)
  await Promise.all(backends.splice(0).map((b) => b.close().catch(() => {})))
})

afterAll(() => pool.end())

describe.skipIf(skipped !== undefined)('WAL transport on pg', () => {
  it('migrate creates the slot; publish writes no row; the relay delivers; a rollback is never delivered', async () => {
    const outbox = await walOutbox()
    const { slot } = walNames(outbox.table)
    const slots = await pool.query('SELECT plugin FROM pg_replication_slots WHERE slot_name = $1', [slot])
    expect(slots.rows).toEqual([{ plugin: 'pgoutput' }])
    const got: DeliveredMessage[] = []
    const r = relay(outbox, { t: async (m) => void got.push(m) })
    await r.start()
    const result = await inPgTransaction(pool, (c) =>
      publish(outbox, c, { topic: 't', key: 'k', payload: { n: 1 }, headers: { h: 'v' } }),
    )
    await expect(
      inPgTransaction(pool, async (c) => {
        await publish(outbox, c, { topic: 't', payload: { n: 'rolled back' } })
        throw new Error('rollback')
      }),
    ).rejects.toThrow('rollback')
    await inPgTransaction(pool, (c) =>
      publishMany(outbox, c, [
        { topic: 't', payload: { n: 2 } },
        { topic: 't', payload: { n: 3 } },
      ]),
    )
    await waitFor(() => got.length >= 3, { what: 'three deliveries' })
    expect(result.published).toBe(true)
    expect(got.map((m) => m.payload)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }])
    expect(got[0]).toMatchObject({ id: result.id, topic: 't', key: 'k', attempts: 1, headers: { h: 'v' } })
    expect(await rows(outbox)).toEqual([])
    // Confirmed past the last transaction: a restart would not deliver them again.
    await waitFor(
      async () => {
        const s = await pool.query(
          'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn) < 100000 AS near FROM pg_replication_slots WHERE slot_name = $1',
          [slot],
        )
        return s.rows[0]?.near === true
      },
      { what: 'the slot confirmed' },
    )
    await r.stop()
    const again: DeliveredMessage[] = []
    const r2 = relay(outbox, { t: async (m) => void again.push(m) })
    await r2.start()
    await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { n: 4 } }))
    await waitFor(() => again.length >= 1, { what: 'the next delivery' })
    expect(again.map((m) => m.payload)).toEqual([{ n: 4 }])
    await r2.stop()
  })

  it('a failing handler moves the message into the table (pending, attempts 1, backoff); the table path retries and dead-letters it', async () => {
    const outbox = await walOutbox()
    const seen: number[] = []
    const r = relay(
      outbox,
      {
        t: async (m) => {
          seen.push(m.attempts)
          if ((m.payload as { fail: number }).fail >= m.attempts) throw new Error(`boom ${m.attempts}`)
        },
      },
      { retry: { baseMs: 10, maxMs: 10, jitter: 0 }, maxAttempts: 3 },
    )
    await r.start()
    const once = await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { fail: 1 } }))
    const always = await inPgTransaction(pool, (c) =>
      publish(outbox, c, { topic: 't', payload: { fail: 99 } }),
    )
    await waitFor(
      async () => (await rows(outbox)).some((row) => row.id === always.id && row.state === 'dead'),
      { what: 'the dead letter' },
    )
    await waitFor(async () => !(await rows(outbox)).some((row) => row.id === once.id), {
      what: 'the retried one delivered',
    })
    const all = await rows(outbox)
    expect(all).toEqual([{ id: always.id, topic: 't', state: 'dead', attempts: 3, last_error: 'boom 3' }])
    expect(seen.sort()).toEqual([1, 1, 2, 2, 3])
    expect(r.stats).toMatchObject({ delivered: 1, deadLettered: 1, retried: 3 })
  })

  it('Cancel dead-letters a WAL message at once (attempts 1, the reason), with keepDelivered the delivered ones are kept', async () => {
    const outbox = await walOutbox()
    const r = relay(
      outbox,
      {
        t: async (m) => {
          if ((m.payload as { cancel?: boolean }).cancel) throw new Cancel('not wanted')
        },
      },
      { keepDelivered: true },
    )
    await r.start()
    const cancelled = await inPgTransaction(pool, (c) =>
      publish(outbox, c, { topic: 't', payload: { cancel: true } }),
    )
    const kept = await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: {} }))
    await waitFor(async () => (await rows(outbox)).length === 2, { what: 'both rows' })
    const byId = new Map((await rows(outbox)).map((row) => [row.id, row]))
    expect(byId.get(cancelled.id)).toMatchObject({ state: 'dead', attempts: 1 })
    expect(String(byId.get(cancelled.id)!.last_error)).toContain('not wanted')
    expect(byId.get(kept.id)).toMatchObject({ state: 'delivered', attempts: 1, last_error: null })
  })

  it('dedupKey, delayMs and ordered topics take the table; the relay delivers both paths', async () => {
    const outbox = await walOutbox({ orderedTopics: ['o'] })
    const got: string[] = []
    const r = relay(outbox, {
      t: async (m) => void got.push(`t:${(m.payload as { n: string }).n}`),
      o: async (m) => void got.push(`o:${(m.payload as { n: string }).n}`),
    })
    const [dedup, again] = await inPgTransaction(pool, async (c) => [
      await publish(outbox, c, { topic: 't', payload: { n: 'dedup' }, dedupKey: 'd1' }),
      await publish(outbox, c, { topic: 't', payload: { n: 'dedup again' }, dedupKey: 'd1' }),
    ])
    await inPgTransaction(pool, async (c) => {
      await publish(outbox, c, { topic: 't', payload: { n: 'delayed' }, delayMs: 50 })
      await publish(outbox, c, { topic: 'o', key: 'k', payload: { n: 'ordered' } })
      await publish(outbox, c, { topic: 't', payload: { n: 'wal' } })
    })
    expect(dedup!.published).toBe(true)
    expect(again).toEqual({ id: dedup!.id, published: false })
    expect((await rows(outbox)).map((row) => row.state)).toEqual(['pending', 'pending', 'pending'])
    await r.start()
    await waitFor(() => got.length >= 4, { what: 'four deliveries' })
    expect(got.sort()).toEqual(['o:ordered', 't:dedup', 't:delayed', 't:wal'])
    await waitFor(async () => (await rows(outbox)).length === 0, { what: 'the table emptied' })
  })

  it('a relay whose topics are all ordered leaves the slot alone: another relay reads it, and each delivers its own', async () => {
    const outbox = await walOutbox({ orderedTopics: ['o'] })
    const { slot } = walNames(outbox.table)
    const slotActive = async () =>
      (await pool.query('SELECT active FROM pg_replication_slots WHERE slot_name = $1', [slot])).rows[0]
        ?.active === true
    const ordered: string[] = []
    const orderedOnly = relay(outbox, { o: async (m) => void ordered.push((m.payload as { n: string }).n) })
    await orderedOnly.start()
    await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 'o', key: 'k', payload: { n: 'o1' } }))
    await waitFor(() => ordered.length === 1, { what: 'the ordered message delivered from the table' })
    // It has delivered, so it runs: had it asked for the slot, a walsender would hold it by now.
    expect(await slotActive()).toBe(false)
    const plain: string[] = []
    const reader = relay(outbox, { t: async (m) => void plain.push((m.payload as { n: string }).n) })
    await reader.start()
    await waitFor(slotActive, { what: 'the slot read by the relay with an unordered topic' })
    await inPgTransaction(pool, async (c) => {
      await publish(outbox, c, { topic: 't', payload: { n: 't1' } })
      await publish(outbox, c, { topic: 'o', key: 'k', payload: { n: 'o2' } })
    })
    await waitFor(() => plain.length === 1 && ordered.length === 2, { what: 'both delivered' })
    expect(plain).toEqual(['t1'])
    expect(ordered).toEqual(['o1', 'o2'])
  })

  it('interleaved long and short transactions are delivered in commit order', async () => {
    const outbox = await walOutbox()
    const got: string[] = []
    const r = relay(
      outbox,
      { t: async (m) => void got.push((m.payload as { n: string }).n) },
      { concurrency: 1 },
    )
    await r.start()
    const long = await pool.connect()
    try {
      await long.query('BEGIN')
      await publish(outbox, long, { topic: 't', payload: { n: 'long-1' } })
      await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { n: 'short-1' } }))
      await publish(outbox, long, { topic: 't', payload: { n: 'long-2' } })
      await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { n: 'short-2' } }))
      await long.query('COMMIT')
    } finally {
      long.release()
    }
    await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { n: 'after' } }))
    await waitFor(() => got.length >= 5, { what: 'five deliveries' })
    expect(got).toEqual(['short-1', 'short-2', 'long-1', 'long-2', 'after'])
  })

  it('after a stop the next relay delivers what the stopped one did not settle; nothing settled is', async () => {
    const outbox = await walOutbox()
    const started = deferred()
    const first: string[] = []
    const r = relay(
      outbox,
      {
        t: async (m, { signal }) => {
          const n = (m.payload as { n: string }).n
          if (n === 'hang') {
            started.resolve()
            await new Promise((resolve) => signal.addEventListener('abort', resolve))
            throw new Error('aborted')
          }
          first.push(n)
        },
      },
      { concurrency: 1 },
    )
    await r.start()
    await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { n: 'done' } }))
    await waitFor(() => first.length === 1, { what: 'the first delivery' })
    await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { n: 'hang' } }))
    await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { n: 'behind' } }))
    await started.promise
    await r.stop({ graceMs: 0 })
    const second: string[] = []
    const r2 = relay(outbox, { t: async (m) => void second.push((m.payload as { n: string }).n) })
    await r2.start()
    await waitFor(() => second.length >= 2, { what: 'the replay' })
    expect(first).toEqual(['done'])
    // 'hang' was given up at stop and comes from the table, 'behind' from the slot (wal-attempts.test.ts).
    expect(second.sort()).toEqual(['behind', 'hang'])
  })

  it('one reader per slot: a second relay stands by and takes over when the first stops', async () => {
    const outbox = await walOutbox()
    const a: string[] = []
    const b: string[] = []
    const ra = relay(outbox, { t: async (m) => void a.push((m.payload as { n: string }).n) })
    await ra.start()
    await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { n: '1' } }))
    await waitFor(() => a.length === 1, { what: 'relay a delivers' })
    const rb = relay(outbox, { t: async (m) => void b.push((m.payload as { n: string }).n) })
    await rb.start()
    await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { n: '2' } }))
    await waitFor(() => a.length === 2, { what: 'relay a delivers again' })
    expect(b).toEqual([])
    await ra.stop()
    await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { n: '3' } }))
    await waitFor(() => b.length === 1, { what: 'relay b takes over', timeoutMs: 15_000 })
    expect(a).toEqual(['1', '2'])
    expect(b).toEqual(['3'])
  })

  it('the relay warns when its slot retains more WAL than slotWarnBytes', async () => {
    const outbox = await walOutbox()
    const warnings: string[] = []
    const logger = {
      debug() {},
      info() {},
      warn: (_o: unknown, msg: string) => void warnings.push(msg),
      error() {},
    }
    const r = relay(outbox, { t: async () => {} }, { slotWarnBytes: 1, logger })
    await r.start()
    await waitFor(() => warnings.some((w) => w.includes('retains')), { what: 'the slot warning' })
    expect(warnings.find((w) => w.includes('retains'))).toContain(
      `replication slot ${walNames(outbox.table).slot} retains`,
    )
  })

  it('a message of a topic this relay has no handler for moves into the table for a relay that has one', async () => {
    const outbox = await walOutbox()
    const r = relay(outbox, { t: async () => {} })
    await r.start()
    const other = await inPgTransaction(pool, (c) => publish(outbox, c, { topic: 'other', payload: {} }))
    await waitFor(async () => (await rows(outbox)).length === 1, { what: 'the move' })
    expect(await rows(outbox)).toEqual([
      { id: other.id, topic: 'other', state: 'pending', attempts: 0, last_error: null },
    ])
  })

  it('a relay on a wal outbox that was never migrated starts, and reports WAL_UNAVAILABLE naming migrate (no slot)', async () => {
    const outbox = defineOutbox({ table: uniqueTableName('wal_unmigrated'), transport: 'wal' })
    outboxes.push(outbox)
    const r = relay(outbox, { t: async () => {} })
    const refusals: OutboxError[] = []
    r.on('error', ({ error }) => {
      if (isOutboxError(error) && error.code === 'WAL_UNAVAILABLE') refusals.push(error)
    })
    await r.start()
    await waitFor(() => refusals.length > 0, { what: 'the WAL_UNAVAILABLE error event' })
    const { slot } = walNames(outbox.table)
    expect(refusals[0]!.message).toBe(
      `[outboxkit] [pg] the replication slot ${slot} of table ${outbox.table.display} does not exist: run migrate(outbox, backend) with transport 'wal' first. See docs/wal.md, "The server".`,
    )
    const slots = await pool.query('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [slot])
    expect(slots.rowCount).toBe(0)
  })
})
