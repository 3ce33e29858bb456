import { mysqlInspector, OUTBOX_COLUMNS, uniqueTableName } from '@outboxkit/conformance'
import { defineOutbox, isOutboxError, outboxDdl } from '@outboxkit/core'
import Database from 'better-sqlite3'
import { describe, expect, test } from 'vitest'

// outboxDdl is what users paste into their own migration tools: each dialect's script must run
// on that database as is, twice (idempotent), and create the contract's columns.
const columns = [...OUTBOX_COLUMNS]

describe('outboxDdl per dialect', () => {
  test('sqlite: runs twice on a fresh database and creates every column', () => {
    const db = new Database(':memory:')
    try {
      const outbox = defineOutbox({ table: 'events' })
      const ddl = outboxDdl(outbox, 'sqlite')
      db.exec(ddl)
      db.exec(ddl)
      const names = (db.prepare(`PRAGMA table_info("events")`).all() as { name: string }[]).map((c) => c.name)
      expect(names).toEqual(expect.arrayContaining(columns))
    } finally {
      db.close()
    }
  })

  test('mysql: runs twice on MariaDB, one statement at a time, and creates every column (and the keys table for ordered topics)', async () => {
    const inspector = mysqlInspector()
    const table = uniqueTableName('ddl_mysql')
    try {
      const outbox = defineOutbox({ table, orderedTopics: ['ledger'] })
      const ddl = outboxDdl(outbox, 'mysql')
      const statements = ddl
        .split(/;\s*\n/)
        .map((s) => s.trim())
        .filter((s) => s.length > 0)
      for (let i = 0; i < 2; i++) for (const s of statements) await inspector.query(s)
      const rows = await inspector.query<{ name: string }>(
        'SELECT column_name AS name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?',
        [table],
      )
      expect(rows.map((r) => r.name)).toEqual(expect.arrayContaining(columns))
      const keys = await inspector.query(
        'SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?',
        [`${table}_keys`],
      )
      expect(keys).toHaveLength(1)
    } finally {
      await inspector.query(`DROP TABLE IF EXISTS \`${table}\``).catch(() => {})
      await inspector.query(`DROP TABLE IF EXISTS \`${table}_keys\``).catch(() => {})
      await inspector.close()
    }
  })

  test('postgres is the default, and an unknown dialect is an INVALID_CONFIG OutboxError', () => {
    const outbox = defineOutbox({ table: 'events' })
    expect(outboxDdl(outbox)).toBe(outboxDdl(outbox, 'postgres'))
    expect(outboxDdl(outbox)).toContain('CREATE TABLE IF NOT EXISTS "events"')
    let error: unknown
    try {
      outboxDdl(outbox, 'oracle' as never)
    } catch (e) {
      error = e
    }
    expect(isOutboxError(error)).toBe(true)
    expect((error as { code: string }).code).toBe('INVALID_CONFIG')
    expect((error as Error).message).toMatch(/^\[outboxkit\] \[core\] .*'postgres', 'mysql' or 'sqlite'/)
  })
})
