// The replication slot of a `transport: 'wal'` outbox on the dashboard (docs/wal.md, "Slot
// safety"): GET /api/stats carries it as pg_replication_slots has it, and the page shows its
// reader, retained WAL, unconfirmed WAL and wal_status with a warning while no relay reads it, in
// Debian's Chromium. A 'table' outbox shows no slot section. PostgreSQL with wal_level = logical.
import { inPgTransaction, testDatabaseUrl, uniqueTableName, waitFor } from '@outboxkit/conformance'
import { createRelay, defineOutbox, migrate, type Outbox, type OutboxBackend } from '@outboxkit/core'
import { walNames } from '@outboxkit/core/adapter'
import { createDashboard } from '@outboxkit/dashboard'
import { pgBackend, publishMany } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { serve, useChromium } from './support/browser.js'

const skipped = process.env.OUTBOXKIT_WAL_SKIPPED

describe.skipIf(skipped !== undefined)('the replication slot of a WAL outbox', () => {
  const chromium = useChromium()
  const wal: Outbox = defineOutbox({ table: uniqueTableName('dash_wal'), transport: 'wal' })
  const table: Outbox = defineOutbox({ table: uniqueTableName('dash_tbl') })
  const backends: OutboxBackend[] = []
  const backend = () => {
    const b = pgBackend({ connectionString: testDatabaseUrl(), max: 2 })
    backends.push(b)
    return b
  }
  let pool: pg.Pool
  let walServer: Awaited<ReturnType<typeof serve>>
  let tableServer: Awaited<ReturnType<typeof serve>>

  /** The slot's row as pg_replication_slots has it, with its retained and unconfirmed bytes. */
  const slotRow = async () =>
    (
      await pool.query(
        `SELECT slot_name, active, wal_status,
           pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::float8 AS retained,
           pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::float8 AS lag
         FROM pg_replication_slots WHERE slot_name = $1`,
        [walNames(wal.table).slot],
      )
    ).rows[0] as { slot_name: string; active: boolean; wal_status: string; retained: number; lag: number }

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 3 })
    await migrate(wal, backend())
    await migrate(table, backend())
    // Messages no relay reads yet: the slot retains them.
    await inPgTransaction(pool, (c) =>
      publishMany(
        wal,
        c,
        [1, 2, 3].map((n) => ({ topic: 't', payload: { n, pad: 'x'.repeat(2000) } })),
      ),
    )
    walServer = await serve(createDashboard({ outbox: wal, backend: backend() }).node)
    tableServer = await serve(createDashboard({ outbox: table, backend: backend() }).node)
  })
  afterAll(async () => {
    await walServer?.close()
    await tableServer?.close()
    await Promise.all(backends.map((b) => b.close()))
    await pool.query(
      'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1',
      [walNames(wal.table).slot],
    )
    await pool.query(`DROP PUBLICATION IF EXISTS "${walNames(wal.table).slot}"`)
    await pool.query(
      `DROP TABLE IF EXISTS "${wal.table.name}", "${walNames(wal.table).markTable}", "${table.table.name}"`,
    )
    await pool.end()
  })

  test('GET /api/stats carries the slot as pg_replication_slots has it; a table outbox has none', async () => {
    const before = await slotRow()
    const body = (await (await fetch(`${walServer.url}/api/stats`)).json()) as {
      slot: Record<string, unknown>
    }
    const after = await slotRow()
    expect(body.slot).toMatchObject({ slot: before.slot_name, active: false, walStatus: before.wal_status })
    // The WAL moves on between the reads: the API's figures lie between them.
    expect(body.slot.retainedBytes).toBeGreaterThanOrEqual(before.retained)
    expect(body.slot.retainedBytes).toBeLessThanOrEqual(after.retained)
    expect(body.slot.lagBytes).toBeGreaterThanOrEqual(before.lag)
    expect(body.slot.lagBytes).toBeLessThanOrEqual(after.lag)
    expect(before.lag).toBeGreaterThan(6000) // the three unread messages
    const tableBody = (await (await fetch(`${tableServer.url}/api/stats`)).json()) as Record<string, unknown>
    expect('slot' in tableBody).toBe(false)
  })

  test('the page shows the slot, warns while no relay reads it, and shows the reader once a relay does', async () => {
    const page = await chromium.openLoaded(walServer.url)
    const section = page.locator('#slot-section')
    await section.waitFor({ state: 'visible' })
    expect(await page.locator('#slot-name').textContent()).toBe(walNames(wal.table).slot)
    expect(await page.locator('#slot-active').textContent()).toBe('not read')
    expect(await page.locator('#slot-status').textContent()).toBe((await slotRow()).wal_status)
    expect(await page.locator('#slot-retained').textContent()).toMatch(/^\d+(\.\d)? (B|KiB|MiB|GiB)$/)
    expect(await page.locator('#slot-warning').textContent()).toContain('No relay reads the slot')
    if (process.env.OUTBOXKIT_SCREENSHOT_DIR)
      await section.screenshot({ path: `${process.env.OUTBOXKIT_SCREENSHOT_DIR}/dashboard-slot.png` })

    const delivered: unknown[] = []
    const relay = createRelay(wal, {
      backend: backend(),
      handlers: { t: async (m) => void delivered.push(m) },
    })
    await relay.start()
    try {
      await waitFor(() => delivered.length === 3, { what: 'the three messages delivered' })
      await waitFor(async () => (await slotRow()).active, { what: 'the slot read' })
      // The page refreshes by itself: it shows the reader and drops the warning.
      await page.locator('#slot-active', { hasText: 'reading' }).waitFor({ timeout: 20_000 })
      await page.locator('#slot-warning').waitFor({ state: 'hidden', timeout: 20_000 })
    } finally {
      await relay.stop()
    }

    const tablePage = await chromium.openLoaded(tableServer.url)
    await tablePage.locator('#n-pending').waitFor()
    await tablePage.locator('#table-name', { hasText: table.table.display }).waitFor()
    expect(await tablePage.locator('#slot-section').isHidden()).toBe(true)
  })
})
