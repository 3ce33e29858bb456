// The WAL transport (docs/wal.md, "The server") on a server that cannot do it: a private cluster
// with wal_level = replica (the shared test server has logical). migrate and the relay's start
// refuse a 'wal' outbox with WAL_UNAVAILABLE, saying what to change, and leave nothing behind;
// a 'table' outbox works there as always. One cluster for the file, dropped after it.
import { inPgTransaction, waitFor } from '@outboxkit/conformance'
import { isOutboxError, migrate, type Outbox, OutboxError } from '@outboxkit/core'
import { walNames } from '@outboxkit/core/adapter'
import { publish } from '@outboxkit/pg'
import { afterEach, describe, expect, test } from 'vitest'
import { skippedBecause, useDedicatedServer } from './support/dedicated-server.js'
import { dedicatedClusterUnavailable, startDedicatedCluster } from './support/pg-cluster.js'
import { World } from './support/world.js'

const unavailable = await skippedBecause('wal-level-replica', dedicatedClusterUnavailable)

/** The refusal a 'wal' outbox gets from a replica-level server, checked for its code and what it tells. */
async function expectWalLevelRefusal(attempt: Promise<unknown>): Promise<void> {
  const error = await attempt.then(
    () => undefined,
    (err: unknown) => err,
  )
  expect(error).toBeInstanceOf(OutboxError)
  if (!isOutboxError(error)) return
  expect(error.code).toBe('WAL_UNAVAILABLE')
  expect(error.message).toMatch(/^\[outboxkit\] \[pg\] /)
  expect(error.message).toContain('needs wal_level = logical')
  expect(error.message).toContain('this server has wal_level = replica')
  expect(error.message).toContain('ALTER SYSTEM SET wal_level = logical and restart PostgreSQL')
  expect(error.message).toContain("or use transport 'table'")
}

describe.skipIf(unavailable !== undefined)('transport wal on a server with wal_level = replica', () => {
  const dedicated = useDedicatedServer(
    () => startDedicatedCluster({ settings: { wal_level: 'replica' } }),
    (cluster) => new World(cluster.url),
  )
  afterEach(() => dedicated.opened().cleanup())

  /** What the WAL transport would have created for `outbox` on the cluster: its table, publication and any slot. */
  async function leftBehind(outbox: Outbox) {
    const w = dedicated.opened()
    const { slot } = walNames(outbox.table)
    const [row] = await w.query<{ tables: number; publications: number; slots: number }>(
      `SELECT (SELECT count(*) FROM pg_class WHERE relname = $1)::int AS tables,
              (SELECT count(*) FROM pg_publication WHERE pubname = $2)::int AS publications,
              (SELECT count(*) FROM pg_replication_slots)::int AS slots`,
      [outbox.table.name, slot],
    )
    return row
  }

  test('the cluster really is at wal_level = replica', async () => {
    expect(await dedicated.opened().query('SHOW wal_level')).toEqual([{ wal_level: 'replica' }])
  })

  test("migrate of a 'wal' outbox rejects with WAL_UNAVAILABLE naming wal_level = logical, and creates nothing", async () => {
    const w = dedicated.opened()
    const outbox = await w.outbox('walmig', { transport: 'wal', migrate: false })
    await expectWalLevelRefusal(migrate(outbox, w.backend()))
    expect(await leftBehind(outbox)).toEqual({ tables: 0, publications: 0, slots: 0 })
    // And a publish to it, with no slot to decode it, is refused too, pointing at migrate.
    const refused = inPgTransaction(w.pool, (c) => publish(outbox, c, { topic: 't', payload: { n: 1 } }))
    await expect(refused).rejects.toMatchObject({
      code: 'WAL_UNAVAILABLE',
      message: expect.stringContaining("Run migrate(outbox, backend) with transport 'wal'"),
    })
  })

  test("createRelay(...).start() of a 'wal' outbox rejects with the same WAL_UNAVAILABLE, and creates nothing", async () => {
    const w = dedicated.opened()
    const outbox = await w.outbox('walrelay', { transport: 'wal', migrate: false })
    const relay = w.relay(outbox, { handlers: { t: async () => {} }, pollIntervalMs: 100 })
    await expectWalLevelRefusal(relay.start())
    expect(relay.running).toBe(false)
    expect(await leftBehind(outbox)).toEqual({ tables: 0, publications: 0, slots: 0 })
  })

  test("a 'table' outbox still migrates, publishes and is delivered there", async () => {
    const w = dedicated.opened()
    const outbox = await w.outbox('tbl')
    const delivered: string[] = []
    const relay = w.relay(outbox, {
      handlers: { t: async (m) => void delivered.push(m.id) },
      pollIntervalMs: 100,
    })
    await relay.start()
    const { id } = await inPgTransaction(w.pool, (c) => publish(outbox, c, { topic: 't', payload: { n: 1 } }))
    await waitFor(() => delivered.includes(id), { what: 'the table message delivered' })
    await waitFor(async () => (await w.rows(outbox)).length === 0, { what: 'its row settled (deleted)' })
    expect(delivered).toEqual([id])
    expect(await leftBehind(outbox)).toEqual({ tables: 1, publications: 0, slots: 0 })
  })
})
