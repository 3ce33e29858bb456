import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inPgTransaction, testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import { createRelay, defineOutbox, migrate, outboxStats } from '@outboxkit/core'
import { walNames } from '@outboxkit/core/adapter'
import { pgBackend, publish } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, describe, expect, test } from 'vitest'
import { runCli } from '../src/run.js'

// The WAL transport's slot from the operator's side (docs/wal.md, "Slot safety"): outboxStats and
// `outboxkit stats` show it, `outboxkit migrate --wal` creates it, `outboxkit slot drop` drops it.

const url = testDatabaseUrl()
const pool = new pg.Pool({ connectionString: url, max: 3 })
const tables: string[] = []
afterAll(async () => {
  for (const t of tables) {
    const { slot, markTable } = walNames({ schema: null, name: t, display: t })
    await pool
      .query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1', [
        slot,
      ])
      .catch(() => {})
    await pool.query(`DROP PUBLICATION IF EXISTS "${slot}"`)
    await pool.query(`DROP TABLE IF EXISTS "${t}", "${markTable}"`)
  }
  await pool.end()
})

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const code = await runCli(args, {
    stdout: (text) => {
      stdout += `${text}\n`
    },
    stderr: (text) => {
      stderr += `${text}\n`
    },
    env: { DATABASE_URL: url },
  })
  return { code, stdout, stderr }
}

const slotOf = async (slot: string) =>
  (await pool.query('SELECT active FROM pg_replication_slots WHERE slot_name = $1', [slot])).rows[0]

describe.skipIf(process.env.OUTBOXKIT_WAL_SKIPPED !== undefined)('the WAL slot for operators', () => {
  test('migrate --wal creates the slot; stats shows retained bytes and lag; slot drop drops it', async () => {
    const table = uniqueTableName('cli_wal')
    tables.push(table)
    const { slot } = walNames({ schema: null, name: table, display: table })
    const migrated = await cli(['migrate', '--wal', '--table', table, '--json'])
    expect(migrated.code, migrated.stderr).toBe(0)
    expect(await slotOf(slot)).toEqual({ active: false })
    const outbox = defineOutbox({ table, transport: 'wal' })
    await inPgTransaction(pool, (c) =>
      publish(outbox, c, { topic: 't', payload: { big: 'x'.repeat(10_000) } }),
    )
    const backend = pgBackend({ pool })
    const stats = await outboxStats(outbox, backend)
    expect(stats.slot).toMatchObject({ slot, active: false, walStatus: 'reserved' })
    expect(stats.slot!.lagBytes).toBeGreaterThan(10_000)
    expect(stats.slot!.retainedBytes).toBeGreaterThanOrEqual(stats.slot!.lagBytes)
    expect((await outboxStats(defineOutbox({ table }), backend)).slot).toBeUndefined()
    const human = await cli(['stats', '--table', table])
    expect(human.stdout).toContain(`slot ${slot}   NOT READ (no relay)`)
    expect(JSON.parse((await cli(['stats', '--table', table, '--json'])).stdout).slot).toMatchObject({ slot })
    expect((await cli(['slot', 'drop', '--table', table])).code).toBe(2)
    const dropped = await cli(['slot', 'drop', '--yes', '--table', table, '--json'])
    expect(JSON.parse(dropped.stdout)).toEqual({ table, dropped: true })
    expect(await slotOf(slot)).toBeUndefined()
    expect((await outboxStats(outbox, backend)).slot).toBeNull()
  })

  test('PGlite and SQLite backends refuse the WAL transport in migrate and createRelay (WAL_UNAVAILABLE)', async () => {
    const { PGlite } = await import('@electric-sql/pglite')
    const { pgliteBackend } = await import('@outboxkit/pglite')
    const { sqliteBackend } = await import('@outboxkit/sqlite')
    const db = await PGlite.create()
    try {
      const outbox = defineOutbox({ table: 'wal_refused', transport: 'wal' })
      const backend = pgliteBackend(db)
      await expect(migrate(outbox, backend)).rejects.toMatchObject({
        code: 'WAL_UNAVAILABLE',
        message: expect.stringContaining('[outboxkit] [pglite]'),
      })
      expect(() => createRelay(outbox, { backend, handlers: { t: async () => {} } })).toThrow(
        expect.objectContaining({ code: 'WAL_UNAVAILABLE', message: expect.stringContaining('pgBackend') }),
      )
      const file = join(tmpdir(), `${uniqueTableName('wal_refused')}.db`)
      const sqlite = sqliteBackend({ filename: file })
      try {
        await expect(migrate(outbox, sqlite)).rejects.toMatchObject({ code: 'WAL_UNAVAILABLE' })
        expect(() => createRelay(outbox, { backend: sqlite, handlers: { t: async () => {} } })).toThrow(
          expect.objectContaining({ code: 'WAL_UNAVAILABLE' }),
        )
      } finally {
        await sqlite.close()
        rmSync(file, { force: true })
      }
      // A relay whose topics are all ordered stays on the table: no slot needed.
      const ordered = defineOutbox({ table: 'wal_ordered', transport: 'wal', orderedTopics: ['o'] })
      expect(() => createRelay(ordered, { backend, handlers: { o: async () => {} } })).not.toThrow()
    } finally {
      await db.close()
    }
  })
})
