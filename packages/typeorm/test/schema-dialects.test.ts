import {
  mysqlInspector,
  removeSqliteFile,
  sqliteInspector,
  tempSqliteFile,
  testMysqlUri,
  uniqueTableName,
} from '@outboxkit/conformance'
import { defineOutbox, isOutboxError } from '@outboxkit/core'
import { createOutboxEntity, createOutboxMigration, type OutboxMessageRow, publish } from '@outboxkit/typeorm'
import type { DataSourceOptions } from 'typeorm'
import { afterAll, describe, expect, test } from 'vitest'
import { expectOnlyMigrationRan, outboxDataSource } from './support/migrated-source.js'
import { ORDER_CREATED, pendingOrderRow } from './support/order-message.js'

const sqliteFile = tempSqliteFile('typeorm_schema')
const mysql = mysqlInspector()
const sqlite = sqliteInspector(sqliteFile)
afterAll(async () => {
  await mysql.close()
  await sqlite.close()
  removeSqliteFile(sqliteFile)
})

const dialects = [
  {
    dialect: 'mysql' as const,
    // DATETIME(6) columns hold UTC: mysql2 must read them as UTC.
    options: { type: 'mysql', url: testMysqlUri(), timezone: 'Z' } as DataSourceOptions,
    tables: async () =>
      (
        await mysql.query<{ t: string }>(
          'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE()',
        )
      ).map((r) => r.t),
    drop: (t: string) => mysql.query(`DROP TABLE IF EXISTS \`${t}\``),
  },
  {
    dialect: 'sqlite' as const,
    options: { type: 'better-sqlite3', database: sqliteFile } as DataSourceOptions,
    tables: async () =>
      (await sqlite.query<{ t: string }>(`SELECT name AS t FROM sqlite_master WHERE type = 'table'`)).map(
        (r) => r.t,
      ),
    drop: (t: string) => sqlite.query(`DROP TABLE IF EXISTS "${t}"`),
  },
]

describe.each(dialects)('entity and migration on $dialect', ({ dialect, options, tables, drop }) => {
  test('runMigrations creates the table, the entity reads it, synchronize leaves it alone; undo drops it', async () => {
    const table = uniqueTableName(`typeorm_${dialect}`)
    const outbox = defineOutbox({ table })
    const OutboxMessage = createOutboxEntity<{ orderId: string }>(outbox, { dialect })
    const CreateOutbox = createOutboxMigration(outbox)
    const { dataSource, migrationsTableName } = outboxDataSource(options, OutboxMessage, CreateOutbox)
    await dataSource.initialize()
    try {
      await expectOnlyMigrationRan(dataSource, CreateOutbox)
      expect(await tables()).toContain(table)
      // The entity is synchronize: false: TypeORM's schema builder proposes nothing for it.
      const diff = await dataSource.driver.createSchemaBuilder().log()
      expect(diff.upQueries.filter((q) => q.query.includes(table))).toEqual([])

      const before = Date.now()
      const { id } = await dataSource.transaction((manager) =>
        publish(outbox, manager, { ...ORDER_CREATED, delayMs: 60_000 }),
      )
      const row: OutboxMessageRow<{ orderId: string }> = await dataSource.manager.findOneByOrFail(
        OutboxMessage,
        {
          id,
        },
      )
      expect(row).toMatchObject({ ...pendingOrderRow(id), seq: null })
      expect(row.createdAt).toBeInstanceOf(Date)
      // The database's clock, read as UTC: within a few seconds of this process's clock.
      expect(Math.abs(row.createdAt.getTime() - before)).toBeLessThan(5_000)
      expect(row.availableAt.getTime() - row.createdAt.getTime()).toBeGreaterThanOrEqual(59_999)
      expect(row.availableAt.getTime() - row.createdAt.getTime()).toBeLessThanOrEqual(60_001)
      expect(await dataSource.getRepository(OutboxMessage).countBy({ state: 'pending' })).toBe(1)
      // Admin-style writes through the entity: reschedule, then delete.
      await dataSource.getRepository(OutboxMessage).update({ id }, { availableAt: new Date(0), attempts: 2 })
      const moved = await dataSource.manager.findOneByOrFail(OutboxMessage, { id })
      expect(moved.availableAt.getTime()).toBe(0)
      expect(moved.attempts).toBe(2)

      expect(await dataSource.showMigrations()).toBe(false)
      await dataSource.undoLastMigration()
      expect(await tables()).not.toContain(table)
    } finally {
      await dataSource.query(`DROP TABLE IF EXISTS ${migrationsTableName}`)
      await dataSource.destroy()
      await drop(table)
    }
  })
})

describe('ordered topics on MySQL', () => {
  test('the migration creates the companion table of ordered keys, and down() drops both', async () => {
    const table = uniqueTableName('typeorm_mysql_ordered')
    const outbox = defineOutbox({ table, orderedTopics: ['ordered'] })
    const OutboxMessage = createOutboxEntity(outbox, { dialect: 'mysql' })
    const CreateOutbox = createOutboxMigration(outbox)
    const { dataSource, migrationsTableName } = outboxDataSource(
      dialects[0]!.options,
      OutboxMessage,
      CreateOutbox,
    )
    await dataSource.initialize()
    try {
      await dataSource.runMigrations()
      expect(await dialects[0]!.tables()).toEqual(expect.arrayContaining([table, `${table}_keys`]))
      const [a, b] = await dataSource.transaction(async (manager) => [
        await publish(outbox, manager, { topic: 'ordered', payload: 1, key: 'k' }),
        await publish(outbox, manager, { topic: 'ordered', payload: 2, key: 'k' }),
      ])
      const rows = await dataSource.getRepository(OutboxMessage).find({ order: { seq: 'ASC' } })
      expect(rows.map((r) => [r.id, r.seq])).toEqual([
        [a!.id, '1'],
        [b!.id, '2'],
      ])
      await dataSource.undoLastMigration()
      const left = await dialects[0]!.tables()
      expect(left).not.toContain(table)
      expect(left).not.toContain(`${table}_keys`)
    } finally {
      await dataSource.query(`DROP TABLE IF EXISTS ${migrationsTableName}`)
      await dataSource.destroy()
      await mysql.query(`DROP TABLE IF EXISTS \`${table}\``)
      await mysql.query(`DROP TABLE IF EXISTS \`${table}_keys\``)
    }
  })
})

test('createOutboxEntity refuses an unknown dialect', () => {
  let err: unknown
  try {
    createOutboxEntity('outbox', { dialect: 'oracle' as never })
  } catch (e) {
    err = e
  }
  expect(isOutboxError(err, 'INVALID_CONFIG'), String(err)).toBe(true)
  expect(createOutboxEntity('app.events', { dialect: 'mysql' }).options).toMatchObject({
    name: 'OutboxMessage_app_events',
    database: 'app',
    tableName: 'events',
    synchronize: false,
  })
})
