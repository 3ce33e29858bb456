import { PGlite } from '@electric-sql/pglite'
import { defineInbox, migrate } from '@outboxkit/core'
import { inboxSqliteTable, inboxTable, processOnce } from '@outboxkit/drizzle'
import { pgliteBackend } from '@outboxkit/pglite'
import { sqliteBackend } from '@outboxkit/sqlite'
import Database from 'better-sqlite3'
import { eq } from 'drizzle-orm'
import { drizzle as drizzleSqlite } from 'drizzle-orm/better-sqlite3'
import { drizzle } from 'drizzle-orm/pglite'
import { expect, test } from 'vitest'

test('inboxTable maps the table migrate(inbox) creates: processOnce writes, Drizzle reads it (PGlite)', async () => {
  const client = await PGlite.create()
  const inbox = defineInbox({ table: 'inbox', consumer: 'billing' })
  await migrate(inbox, pgliteBackend(client))
  const db = drizzle({ client })
  const entries = inboxTable(inbox)
  const r = await db.transaction((tx) => processOnce(inbox, tx, { id: 'm-1' }, () => 1))
  expect(r.processed).toBe(true)
  const rows = await db.select().from(entries).where(eq(entries.consumer, 'billing'))
  expect(rows).toHaveLength(1)
  expect(rows[0]).toMatchObject({ consumer: 'billing', messageId: 'm-1' })
  expect(rows[0]!.processedAt).toBeInstanceOf(Date)
  await client.close()
})

test('inboxSqliteTable maps the SQLite inbox table', async () => {
  const sqlite = new Database(':memory:')
  const inbox = defineInbox({ consumer: 'billing' })
  await migrate(inbox, sqliteBackend(sqlite))
  const db = drizzleSqlite({ client: sqlite })
  db.transaction((tx) => {
    void processOnce(inbox, tx, { id: 'm-2' }, () => 1)
  })
  const rows = db.select().from(inboxSqliteTable(inbox)).all()
  expect(rows).toEqual([{ consumer: 'billing', messageId: 'm-2', processedAt: expect.any(Number) }])
  sqlite.close()
})
