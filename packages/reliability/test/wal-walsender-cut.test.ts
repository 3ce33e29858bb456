// The replication connection of a WAL relay cut by the server (pg_terminate_backend on the
// walsender, as a failover, a restart or an administrator would): the relay reads the slot again
// on a new connection by itself and delivers what was committed meanwhile (at least once), and no connection of
// the old stream is left behind. On pgBackend and on postgresJsBackend. Asserted through
// pg_replication_slots and pg_stat_activity.
import {
  dropWalOutbox,
  inPgTransaction,
  testDatabaseUrl,
  uniqueTableName,
  waitFor,
} from '@outboxkit/conformance'
import {
  createRelay,
  type DeliveredMessage,
  defineOutbox,
  migrate,
  type OutboxBackend,
} from '@outboxkit/core'
import { walNames } from '@outboxkit/core/adapter'
import { pgBackend, publish } from '@outboxkit/pg'
import { postgresJsBackend } from '@outboxkit/postgres-js'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'

const skipped = process.env.OUTBOXKIT_WAL_SKIPPED
let pool: pg.Pool
beforeAll(() => {
  pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 3 })
})
afterAll(() => pool?.end())

const BACKENDS: Record<string, (applicationName: string) => OutboxBackend> = {
  pg: (name) => pgBackend({ connectionString: testDatabaseUrl(), application_name: name, max: 2 }),
  'postgres-js': (name) =>
    postgresJsBackend({ url: testDatabaseUrl(), connection: { application_name: name }, max: 2 }),
}

describe.skipIf(skipped !== undefined).each(Object.keys(BACKENDS))('WAL relay on %s', (driver) => {
  test('its walsender terminated twice: it reads the slot again by itself, delivers every message, and leaves no old stream', async () => {
    const outbox = defineOutbox({ table: uniqueTableName('walcut'), transport: 'wal' })
    const name = `okwalcut_${process.pid}_${driver}`.slice(0, 60)
    const backend = BACKENDS[driver]!(name)
    await migrate(outbox, backend)
    const { slot } = walNames(outbox.table)
    const got: string[] = []
    const relay = createRelay(outbox, {
      backend,
      handlers: { t: async (m: DeliveredMessage) => void got.push((m.payload as { n: string }).n) },
    })
    const send = (n: string) =>
      inPgTransaction(pool, (c) => publish(outbox, c, { topic: 't', payload: { n } }))
    const walsender = async () =>
      (
        await pool.query('SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1 AND active', [
          slot,
        ])
      ).rows[0]?.active_pid as number | undefined
    const streams = async () =>
      Number(
        (
          await pool.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND backend_type = 'walsender'",
            [name],
          )
        ).rows[0].n,
      )
    try {
      await relay.start()
      await send('before')
      await waitFor(() => got.includes('before'), { what: 'the first message' })
      for (const cut of ['cut1', 'cut2']) {
        const pid = await waitFor(walsender, { what: 'the walsender reading the slot' })
        await pool.query('SELECT pg_terminate_backend($1)', [pid])
        await send(cut)
        await waitFor(() => got.includes(cut), { timeoutMs: 20_000, what: `the message sent after ${cut}` })
        const again = await waitFor(walsender, { what: 'the slot read again' })
        expect(again).not.toBe(pid)
      }
      // One stream reads the slot: the terminated ones left no connection behind.
      await waitFor(async () => (await streams()) === 1, { what: 'one replication connection left' })
      expect([...new Set(got)].sort()).toEqual(['before', 'cut1', 'cut2'])
    } finally {
      await relay.stop()
      await dropWalOutbox(pool, outbox)
    }
  })
})
