import {
  deferred,
  dropWalOutbox,
  inPgTransaction,
  observeFor,
  testDatabaseUrl,
  uniqueTableName,
  waitFor,
} from '@outboxkit/conformance'
import {
  createRelay,
  type DeliveredMessage,
  defineOutbox,
  type HandlerContext,
  migrate,
  type Outbox,
  type OutboxBackend,
  type Relay,
} from '@outboxkit/core'
import { walNames } from '@outboxkit/core/adapter'
import { pgBackend, publish } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

// Attempts and deadlines of slot messages (docs/wal.md, "Replays and attempts"): a handler past
// maxHandlerMs, or still running when the relay stops, is a failed attempt moved into the table;
// the dispatch mark covers what was handed over. Asserted through SQL on a pool of the test's own.

const skipped = process.env.OUTBOXKIT_WAL_SKIPPED
let pool: pg.Pool
const outboxes: Outbox[] = []
const relays: Relay[] = []
const backends: OutboxBackend[] = []

type Handler = (m: DeliveredMessage, context: HandlerContext) => Promise<void>

function backend(): OutboxBackend {
  const b = pgBackend({ connectionString: testDatabaseUrl() })
  backends.push(b)
  return b
}

async function walOutbox(): Promise<Outbox> {
  const outbox = defineOutbox({ table: uniqueTableName('walatt'), transport: 'wal' })
  outboxes.push(outbox)
  await migrate(outbox, backend())
  return outbox
}

function relay(outbox: Outbox, t: Handler, extra = {}): Relay {
  const r = createRelay(outbox, { backend: backend(), handlers: { t }, pollIntervalMs: 100, ...extra })
  relays.push(r)
  return r
}

const send = (outbox: Outbox, n: string) =>
  inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { n } }))

const nOf = (m: DeliveredMessage) => (m.payload as { n: string }).n

async function row(outbox: Outbox, id: string) {
  const r = await pool.query(
    `SELECT state, attempts, last_error, available_at > now() AS later FROM "${outbox.table.name}" WHERE id = $1`,
    [id],
  )
  return r.rows[0] as { state: string; attempts: number; last_error: string; later: boolean } | undefined
}

async function mark(outbox: Outbox): Promise<string | undefined> {
  const { slot, markTable } = walNames(outbox.table)
  const r = await pool.query(`SELECT dispatched_lsn::text AS lsn FROM "${markTable}" WHERE slot = $1`, [slot])
  return r.rows[0]?.lsn
}

async function confirmedFlush(outbox: Outbox): Promise<string> {
  const r = await pool.query(
    'SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1',
    [walNames(outbox.table).slot],
  )
  return r.rows[0].lsn
}

/** The server's WAL position now. */
async function walPosition(): Promise<bigint> {
  return lsnValue((await pool.query('SELECT pg_current_wal_insert_lsn()::text AS lsn')).rows[0].lsn)
}

const lsnValue = (text: string) => {
  const [hi, lo] = text.split('/')
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`)
}

beforeAll(() => {
  pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 6 })
})

// Each test's relays stop and its slots go after the test: the server's few replication slots are
// shared with the other test files running at once.
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.stop({ graceMs: 100 }).catch(() => {})))
  for (const outbox of outboxes.splice(0)) await dropWalOutbox(pool, outbox)
  await Promise.all(backends.splice(0).map((b) => b.close().catch(() => {})))
})

afterAll(() => pool.end())

describe.skipIf(skipped !== undefined)('WAL transport on pg: attempts and deadlines', () => {
  it('a slot message past maxHandlerMs is a failed attempt: in the table (attempts 1, backoff), the slot confirmed past it, the table delivers attempt 2', async () => {
    const outbox = await walOutbox()
    const aborted = deferred<unknown>()
    const seen: string[] = []
    const r = relay(
      outbox,
      async (m, { signal }) => {
        seen.push(`${nOf(m)}@${m.attempts}`)
        if (nOf(m) === 'slow' && m.attempts === 1) {
          await new Promise((resolve) => signal.addEventListener('abort', resolve))
          aborted.resolve(signal.reason)
        }
      },
      { maxHandlerMs: 300, retry: { baseMs: 200, maxMs: 200, jitter: 0 } },
    )
    await r.start()
    const slow = await send(outbox, 'slow')
    const afterSlow = await walPosition()
    expect(String(await aborted.promise)).toContain('maxHandlerMs (300 ms)')
    await waitFor(async () => (await row(outbox, slow.id))?.state !== undefined, { what: 'the move' })
    const moved = await row(outbox, slow.id)
    expect(moved).toMatchObject({ attempts: 1 })
    expect(moved!.last_error).toContain('handler ran past maxHandlerMs')
    await send(outbox, 'next')
    await waitFor(() => seen.includes('slow@2') && seen.includes('next@1'), { what: 'both delivered' })
    expect(seen.sort()).toEqual(['next@1', 'slow@1', 'slow@2'])
    // The slot moved past the given-up message: a later relay would not read it again.
    await waitFor(async () => lsnValue(await confirmedFlush(outbox)) >= afterSlow, {
      what: 'the slot confirmed past it',
    })
  })

  it('a handler still running at stop is a failed attempt in the table; what was never handed over streams again, each once', async () => {
    const outbox = await walOutbox()
    const started = deferred()
    const r1 = relay(
      outbox,
      async (m, { signal }) => {
        if (nOf(m) !== 'hang') return
        started.resolve()
        await new Promise((resolve) => signal.addEventListener('abort', resolve))
      },
      { concurrency: 1, retry: { baseMs: 50, maxMs: 50, jitter: 0 } },
    )
    await r1.start()
    const hang = await send(outbox, 'hang')
    const behind = await send(outbox, 'behind')
    await started.promise
    await r1.stop({ graceMs: 0 })
    expect(await row(outbox, hang.id)).toMatchObject({ state: 'pending', attempts: 1 })
    expect((await row(outbox, hang.id))!.last_error).toContain('the relay is stopping')
    expect(await row(outbox, behind.id)).toBeUndefined()
    const second: string[] = []
    const r2 = relay(outbox, async (m) => void second.push(`${nOf(m)}@${m.attempts}`))
    await r2.start()
    await waitFor(() => second.length >= 2, { what: 'both delivered by the second relay' })
    await observeFor(500) // a window for a duplicate that must not come
    expect(second.sort()).toEqual(['behind@1', 'hang@2'])
  })

  it('with maxAttempts 1 a handler given up at stop is dead at once', async () => {
    const outbox = await walOutbox()
    const started = deferred()
    const r = relay(
      outbox,
      async (_m, { signal }) => {
        started.resolve()
        await new Promise((resolve) => signal.addEventListener('abort', resolve))
      },
      { maxAttempts: 1 },
    )
    await r.start()
    const only = await send(outbox, 'x')
    await started.promise
    await r.stop({ graceMs: 0 })
    expect(await row(outbox, only.id)).toMatchObject({ state: 'dead', attempts: 1 })
  })

  it('the dispatch mark covers a transaction before its handler runs, and a clean stop sets it to the confirmation', async () => {
    const outbox = await walOutbox()
    const marksAtHandler: bigint[] = []
    const r = relay(outbox, async () => {
      marksAtHandler.push(lsnValue((await mark(outbox)) ?? '0/0'))
    })
    await r.start()
    // One at a time: each transaction ends after `before[i]`, and is read before `before[i + 1]`.
    const before: bigint[] = []
    for (let i = 0; i < 4; i++) {
      before.push(await walPosition())
      await send(outbox, `m${i}`)
      await waitFor(() => marksAtHandler.length === i + 1, { what: `delivery ${i + 1}` })
    }
    before.push(await walPosition())
    marksAtHandler.forEach((m, i) => {
      expect(m).toBeGreaterThan(before[i]!)
      expect(m).toBeLessThanOrEqual(before[i + 1]!)
    })
    await r.stop()
    expect(await mark(outbox)).toBe(await confirmedFlush(outbox))
  })
})
