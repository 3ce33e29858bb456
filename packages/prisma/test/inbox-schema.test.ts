import { defineInbox, inboxDdl, isOutboxError } from '@outboxkit/core'
import { inboxMigrationSql, inboxPrismaModel } from '@outboxkit/prisma'
import { expect, test } from 'vitest'

test('inboxPrismaModel maps the columns, the composite id and the purge index; inboxMigrationSql is core DDL', () => {
  const inbox = defineInbox({ table: 'inbox', consumer: 'billing' })
  const model = inboxPrismaModel(inbox)
  expect(model).toContain('model InboxEntry {')
  expect(model).toContain('messageId   String @map("message_id")')
  expect(model).toContain('@@id([consumer, messageId])')
  expect(model).toContain('@@index([consumer, processedAt], map: "inbox_processed_at_idx")')
  expect(model).toContain('@@map("inbox")')
  expect(inboxPrismaModel(inbox, { provider: 'mysql' })).toContain('@db.VarChar(255)')
  for (const provider of ['postgresql', 'mysql', 'sqlite'] as const) {
    const dialect = provider === 'postgresql' ? 'postgres' : provider
    expect(inboxMigrationSql(inbox, { provider })).toContain(inboxDdl(inbox, dialect))
  }
  let err: unknown
  try {
    inboxMigrationSql(inbox, { provider: 'mongodb' as never })
  } catch (e) {
    err = e
  }
  expect(isOutboxError(err, 'INVALID_CONFIG')).toBe(true)
})
