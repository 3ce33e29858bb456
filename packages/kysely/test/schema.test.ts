import { serverInspector, testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import { defineOutbox, outboxDdl } from '@outboxkit/core'
import { type OutboxState, type OutboxTable, publish } from '@outboxkit/kysely'
import { type Generated, Kysely, type Migration, Migrator, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, expect, expectTypeOf, test } from 'vitest'

interface OrdersTable {
  id: string
  total: number
  created_at: Generated<Date>
}

/** How a user adds the outbox to their Kysely `Database` interface. */
interface Database {
  orders: OrdersTable
  outbox: OutboxTable<{ orderId: string }>
}

// Everything lives in a schema of its own, so the table names can be the ones users write.
const schema = uniqueTableName('kysely_schema')
const inspector = serverInspector()
const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 })
const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }).withSchema(schema)
const outbox = defineOutbox({ table: `${schema}.outbox` })

// The documented workflow: the outbox DDL inside an ordinary Kysely migration.
const migrations: Record<string, Migration> = {
  '001_orders': {
    async up(db) {
      await db.schema
        .createTable('orders')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('total', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
        .execute()
    },
  },
  '002_outbox': {
    async up(db) {
      await sql.raw(outboxDdl(outbox)).execute(db)
    },
    async down(db) {
      await db.schema.dropTable('outbox').execute()
    },
  },
}

beforeAll(async () => {
  await inspector.query(`CREATE SCHEMA ${schema}`)
})
afterAll(async () => {
  await inspector.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await inspector.close()
  await pool.end()
})

test('a Kysely migration creates the outbox with outboxDdl, and is safe to run again', async () => {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: schema,
  })
  const { error, results } = await migrator.migrateToLatest()
  expect(error).toBeUndefined()
  expect(results?.map((r) => `${r.migrationName}:${r.status}`)).toEqual([
    '001_orders:Success',
    '002_outbox:Success',
  ])
  await sql.raw(outboxDdl(outbox)).execute(db)
  const indexes = await inspector.query(
    `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'outbox'`,
    [schema],
  )
  expect(indexes.map((r) => r.indexname).sort()).toEqual([
    'outbox_dead_idx',
    'outbox_dedup_key_idx',
    'outbox_due_idx',
    'outbox_key_seq_idx',
    'outbox_pkey',
  ])
})

test('OutboxTable types the rows as PostgresDialect returns them', async () => {
  const { id } = await db.transaction().execute(async (trx) => {
    await trx.insertInto('orders').values({ id: 'o-1', total: 42 }).execute()
    return publish(outbox, trx, {
      topic: 'order.created',
      payload: { orderId: 'o-1' },
      headers: { tenant: 't1' },
    })
  })

  const row = await db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  expectTypeOf(row.payload).toEqualTypeOf<{ orderId: string }>()
  expectTypeOf(row.headers).toEqualTypeOf<Record<string, string>>()
  expectTypeOf(row.state).toEqualTypeOf<OutboxState>()
  expectTypeOf(row.available_at).toEqualTypeOf<Date>()
  expectTypeOf(row.attempts).toEqualTypeOf<number>()
  expectTypeOf(row.dedup_key).toEqualTypeOf<string | null>()
  expect(row.payload).toEqual({ orderId: 'o-1' })
  expect(row.headers).toEqual({ tenant: 't1' })
  expect(row.state).toBe('pending')
  expect(row.attempts).toBe(0)
  expect(row.available_at).toBeInstanceOf(Date)
  expect(row.created_at).toBeInstanceOf(Date)
  expect(row.key).toBeNull()
  expect(row.dedup_key).toBeNull()
  expect(row.last_error).toBeNull()

  // Admin-style writes type-check too: reschedule a row, then delete it.
  await db
    .updateTable('outbox')
    .set({ state: 'pending', attempts: 0, available_at: new Date() })
    .where('id', '=', id)
    .execute()
  // @ts-expect-error the id is assigned by publish and never updated
  const badUpdate = () => db.updateTable('outbox').set({ id: 'x' })
  expect(typeof badUpdate).toBe('function')
  await db.deleteFrom('outbox').where('id', '=', id).execute()
  expect(await inspector.query(`SELECT 1 FROM ${schema}.outbox`)).toEqual([])
})
