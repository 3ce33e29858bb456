import { serverInspector, testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import { defineOutbox, isOutboxError } from '@outboxkit/core'
import { createOutboxEntity, createOutboxMigration, type OutboxMessageRow, publish } from '@outboxkit/typeorm'
import { DataSource } from 'typeorm'
import { afterAll, describe, expect, test } from 'vitest'
import { expectOnlyMigrationRan, outboxDataSource } from './support/migrated-source.js'
import { ORDER_CREATED, pendingOrderRow } from './support/order-message.js'

const inspector = serverInspector()
const schema = uniqueTableName('typeorm_schema')
afterAll(async () => {
  await inspector.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await inspector.close()
})

const exists = async (qualified: string) =>
  (await inspector.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [qualified]))[0]!.t !==
  null

const codeOf = (fn: () => unknown) => {
  try {
    fn()
  } catch (err) {
    expect(isOutboxError(err), String(err)).toBe(true)
    return (err as { code: string }).code
  }
  return undefined
}

describe('entity and migration', () => {
  const tables = [
    ['a plain table', uniqueTableName('typeorm_entity')],
    ['a schema-qualified table', `${schema}.${uniqueTableName('outbox')}`],
    // 63 bytes: PostgreSQL trims the implicit primary-key and check names, the entity must match.
    ['a 63-byte table name', uniqueTableName('typeorm_long').padEnd(63, 'x')],
  ] as const

  test.each(tables)(
    'runMigrations creates %s that the entity maps exactly; undo drops it',
    async (_label, table) => {
      const outbox = defineOutbox({ table })
      const OutboxMessage = createOutboxEntity<{ orderId: string }>(outbox)
      const CreateOutbox = createOutboxMigration(outbox)
      if (table.includes('.')) await inspector.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
      const { dataSource, migrationsTableName } = outboxDataSource(
        { type: 'postgres', url: testDatabaseUrl() },
        OutboxMessage,
        CreateOutbox,
      )
      await dataSource.initialize()
      try {
        await expectOnlyMigrationRan(dataSource, CreateOutbox)
        expect(await exists(table)).toBe(true)
        // The entity describes the table exactly as core's DDL made it: nothing for TypeORM to change.
        const diff = await dataSource.driver.createSchemaBuilder().log()
        expect(diff.upQueries.map((q) => q.query)).toEqual([])

        const { id } = await dataSource.transaction((manager) => publish(outbox, manager, ORDER_CREATED))
        const row: OutboxMessageRow<{ orderId: string }> = await dataSource.manager.findOneByOrFail(
          OutboxMessage,
          { id },
        )
        expect(row).toMatchObject(pendingOrderRow(id))
        expect(row.availableAt).toBeInstanceOf(Date)
        expect(row.createdAt).toBeInstanceOf(Date)
        expect(await dataSource.getRepository(OutboxMessage).countBy({ state: 'pending' })).toBe(1)

        expect(await dataSource.showMigrations()).toBe(false)
        await dataSource.undoLastMigration()
        expect(await exists(table)).toBe(false)
      } finally {
        await dataSource.query(`DROP TABLE IF EXISTS ${migrationsTableName}`)
        await dataSource.destroy()
        await inspector.query(`DROP TABLE IF EXISTS ${table}`)
      }
    },
  )

  test('a table created by synchronize from the entity takes publish, dedupKey included', async () => {
    const table = uniqueTableName('typeorm_sync')
    const outbox = defineOutbox({ table })
    const OutboxMessage = createOutboxEntity(outbox)
    const dataSource = new DataSource({
      type: 'postgres',
      url: testDatabaseUrl(),
      entities: [OutboxMessage],
      synchronize: true,
    })
    await dataSource.initialize()
    try {
      const first = await dataSource.transaction((m) =>
        publish(outbox, m, { topic: 't', payload: 1, dedupKey: 'd' }),
      )
      const again = await dataSource.transaction((m) =>
        publish(outbox, m, { topic: 't', payload: 2, dedupKey: 'd' }),
      )
      expect(again).toEqual({ id: first.id, published: false })
      const indexes = await inspector.query<{ indexname: string }>(
        'SELECT indexname FROM pg_indexes WHERE tablename = $1 ORDER BY indexname',
        [table],
      )
      expect(indexes.map((i) => i.indexname)).toEqual([
        `${table}_dead_idx`,
        `${table}_dedup_key_idx`,
        `${table}_due_idx`,
        `${table}_key_seq_idx`,
        `${table}_pkey`,
      ])
    } finally {
      await dataSource.query(`DROP TABLE IF EXISTS ${table}`)
      await dataSource.destroy()
    }
  })

  test('synchronize creates no sequence for ordered topics; the migration, run after it, adds it', async () => {
    const table = uniqueTableName('typeorm_sync_seq')
    const outbox = defineOutbox({ table, orderedTopics: ['ledger.entry'] })
    const dataSource = new DataSource({
      type: 'postgres',
      url: testDatabaseUrl(),
      entities: [createOutboxEntity(outbox)],
      migrations: [createOutboxMigration(outbox, { timestamp: 1767225600000 })],
      migrationsTableName: `${table}_migrations`,
      synchronize: true,
    })
    await dataSource.initialize()
    const message = { topic: 'ledger.entry', key: 'acct-1', payload: { n: 1 } }
    try {
      const refused = await dataSource
        .transaction((m) => publish(outbox, m, message))
        .then(
          () => undefined,
          (err: unknown) => err,
        )
      expect(isOutboxError(refused, 'DATABASE'), String(refused)).toBe(true)
      expect(String(refused)).toContain(`"${table}_seq_seq" does not exist`)
      expect(await exists(`${table}_seq_seq`)).toBe(false)

      await dataSource.runMigrations() // what docs/adapters/typeorm.md tells synchronize users to do
      expect(await exists(`${table}_seq_seq`)).toBe(true)
      const published = await dataSource.transaction((m) => publish(outbox, m, message))
      expect(published.published).toBe(true)
      const rows = await inspector.query<{ seq: string | null }>(`SELECT seq::text FROM "${table}"`)
      expect(rows).toEqual([{ seq: expect.stringMatching(/^\d+$/) }])
    } finally {
      await dataSource.query(`DROP TABLE IF EXISTS "${table}"`)
      await dataSource.query(`DROP TABLE IF EXISTS "${table}_migrations"`)
      await dataSource.destroy()
    }
  })

  test('names: the entity and migration defaults, and invalid inputs', () => {
    expect(createOutboxEntity().options.name).toBe('OutboxMessage')
    expect(createOutboxEntity().options.tableName).toBe('outbox')
    expect(createOutboxEntity('app.events').options).toMatchObject({
      name: 'OutboxMessage_app_events',
      schema: 'app',
      tableName: 'events',
    })
    expect(createOutboxEntity('outbox', { name: 'Msg' }).options.name).toBe('Msg')
    const Default = createOutboxMigration(defineOutbox())
    expect(new Default().name).toBe('CreateOutbox1735689600000')
    expect(Default.name).toBe('CreateOutbox1735689600000')
    const Events = createOutboxMigration('app.order_events', { timestamp: 1767225600000 })
    expect(new Events().name).toBe('CreateOutboxAppOrderEvents1767225600000')
    expect(new (createOutboxMigration('outbox', { name: 'Outbox1767225600000' }))().name).toBe(
      'Outbox1767225600000',
    )

    expect(codeOf(() => createOutboxEntity('bad name'))).toBe('INVALID_CONFIG')
    expect(codeOf(() => createOutboxEntity({} as never))).toBe('INVALID_CONFIG')
    expect(codeOf(() => createOutboxMigration('outbox; drop table x'))).toBe('INVALID_CONFIG')
    expect(codeOf(() => createOutboxMigration('outbox', { timestamp: 17 }))).toBe('INVALID_CONFIG')
    expect(codeOf(() => createOutboxMigration('outbox', { timestamp: 1.5e12 + 0.5 }))).toBe('INVALID_CONFIG')
    expect(codeOf(() => createOutboxMigration('outbox', { name: 'CreateOutbox' }))).toBe('INVALID_CONFIG')
  })

  test('the migration refuses an unsupported driver before running anything', async () => {
    const Migration = createOutboxMigration('outbox')
    const cockroach = new DataSource({ type: 'cockroachdb', timeTravelQueries: false })
    for (const step of ['up', 'down'] as const) {
      const err = await new Migration()[step](cockroach.createQueryRunner()).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(isOutboxError(err, 'INVALID_CONFIG'), String(err)).toBe(true)
      expect((err as Error).message).toContain('createOutboxMigration')
    }
  })
})
