import { serverInspector, testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import { defineInbox } from '@outboxkit/core'
import { createInboxEntity, createInboxMigration, processOnce } from '@outboxkit/typeorm'
import { afterAll, expect, test } from 'vitest'
import { expectOnlyMigrationRan, outboxDataSource } from './support/migrated-source.js'

const inspector = serverInspector()
afterAll(() => inspector.close())

test('createInboxMigration creates the inbox table that processOnce writes and createInboxEntity reads; undo drops it', async () => {
  const inbox = defineInbox({ table: uniqueTableName('typeorm_inbox'), consumer: 'billing' })
  const InboxEntry = createInboxEntity(inbox)
  const CreateInbox = createInboxMigration(inbox)
  const { dataSource, migrationsTableName } = outboxDataSource(
    { type: 'postgres', url: testDatabaseUrl() },
    InboxEntry,
    CreateInbox,
  )
  await dataSource.initialize()
  try {
    await expectOnlyMigrationRan(dataSource, CreateInbox)
    const r = await dataSource.transaction((manager) =>
      processOnce(inbox, manager, { id: 'm-1' }, () => 'ran'),
    )
    expect(r).toEqual({ processed: true, result: 'ran' })
    const rows = await dataSource.getRepository(InboxEntry).findBy({ consumer: 'billing' })
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ consumer: 'billing', messageId: 'm-1' })
    expect(rows[0]!.processedAt).toBeInstanceOf(Date)
    await dataSource.undoLastMigration()
    const [row] = await inspector.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [
      inbox.table.name,
    ])
    expect(row!.t).toBeNull()
  } finally {
    await dataSource.destroy()
    await inspector.query(`DROP TABLE IF EXISTS ${migrationsTableName}, ${inbox.table.name}`)
  }
})
