import { inPgTransaction, testDatabaseUrl, uniqueTableName, waitFor } from '@outboxkit/conformance'
import {
  createRelay,
  type DeliveredMessage,
  defineOutbox,
  migrate,
  type Outbox,
  type OutboxBackend,
  type Relay,
} from '@outboxkit/core'
import { walNames } from '@outboxkit/core/adapter'
import { pgBackend, publish, publishMany } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

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
  handlers: Record<string, (m: DeliveredMessage) => Promise<void>>,
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

afterAll(async () => {
  await Promise.all(relays.map((r) => r.stop({ graceMs: 100 }).catch(() => {})))
  for (const outbox of outboxes) {
    const { slot } = walNames(outbox.table)
    await waitFor(
      async () =>
        (await pool.query('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1 AND active', [slot]))
          .rowCount === 0,
      { what: `${slot} inactive` },
    )
    await pool.query(
      'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1',
      [slot],
    )
    await pool.query(`DROP PUBLICATION IF EXISTS "${slot}"`)
    await pool.query(`DROP TABLE IF EXISTS "${outbox.table.name}"`)
  }
  await Promise.all(backends.map((b) => b.close().catch(() => {})))
  await pool.end()
})

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
})
