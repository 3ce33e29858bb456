import {
  mysqlInspector,
  removeSqliteFile,
  tempSqliteFile,
  testMysqlUri,
  uniqueTableName,
} from '@outboxkit/conformance'
import { defineOutbox } from '@outboxkit/core'
import { mysqlOutboxDdl, sqliteOutboxDdl } from '@outboxkit/core/adapter'
import { type MysqlOutboxTable, publish, type SqliteOutboxTable } from '@outboxkit/kysely'
import Database from 'better-sqlite3'
import { Kysely, type Migration, Migrator, MysqlDialect, SqliteDialect, sql } from 'kysely'
import { createPool } from 'mysql2'
import { expect, expectTypeOf, test } from 'vitest'

test('MySQL: a Kysely migration runs mysqlOutboxDdl, and MysqlOutboxTable types the rows mysql2 returns', async () => {
  // A database of its own, so the table can be named as users name it.
  const schema = uniqueTableName('kysely_mysql_schema')
  const outbox = defineOutbox({ table: `${schema}.outbox` })
  const inspector = mysqlInspector()
  await inspector.query(`CREATE DATABASE \`${schema}\``)
  // DATETIME(6) columns hold UTC: mysql2 reads them as UTC with timezone 'Z'.
  const pool = createPool({ uri: testMysqlUri(), connectionLimit: 2, timezone: 'Z' })
  const root = new Kysely<{ outbox: MysqlOutboxTable<{ orderId: string }> }>({
    dialect: new MysqlDialect({ pool }),
  })
  const db = root.withSchema(schema)
  const migrations: Record<string, Migration> = {
    '001_outbox': {
      up: async (trx) => void (await sql.raw(mysqlOutboxDdl(outbox)).execute(trx)),
    },
  }
  try {
    const migrator = new Migrator({
      db,
      provider: { getMigrations: async () => migrations },
      migrationTableSchema: schema,
    })
    const { error } = await migrator.migrateToLatest()
    expect(error).toBeUndefined()
    const before = Date.now()
    const { id } = await root
      .transaction()
      .execute((trx) =>
        publish(outbox, trx, { topic: 't', payload: { orderId: 'o-1' }, headers: { a: 'b' } }),
      )
    const row = await db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
    expectTypeOf(row.payload).toEqualTypeOf<{ orderId: string }>()
    expectTypeOf(row.available_at).toEqualTypeOf<Date>()
    expect(row.payload).toEqual({ orderId: 'o-1' })
    expect(row.headers).toEqual({ a: 'b' })
    expect(row.state).toBe('pending')
    expect(row.attempts).toBe(0)
    expect(row.created_at).toBeInstanceOf(Date)
    expect(Math.abs(row.created_at.getTime() - before)).toBeLessThan(5_000)
    expect(row.seq).toBeNull()
  } finally {
    await inspector.query(`DROP DATABASE IF EXISTS \`${schema}\``)
    await inspector.close()
    await root.destroy()
  }
})

test('SQLite: sqliteOutboxDdl through the connection, and SqliteOutboxTable types the rows better-sqlite3 returns', async () => {
  const file = tempSqliteFile('kysely_sqlite_schema')
  const database = new Database(file)
  const outbox = defineOutbox({ table: 'outbox' })
  const db = new Kysely<{ outbox: SqliteOutboxTable }>({ dialect: new SqliteDialect({ database }) })
  try {
    // Several statements: better-sqlite3's exec(), as Kysely prepares one statement per query.
    database.exec(sqliteOutboxDdl(outbox))
    database.exec(sqliteOutboxDdl(outbox))
    const before = Date.now()
    const { id } = await db
      .transaction()
      .execute((trx) => publish(outbox, trx, { topic: 't', payload: { orderId: 'o-1' }, delayMs: 1_000 }))
    const row = await db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
    expectTypeOf(row.payload).toEqualTypeOf<string>()
    expectTypeOf(row.available_at).toEqualTypeOf<number>()
    expect(JSON.parse(row.payload)).toEqual({ orderId: 'o-1' })
    expect(JSON.parse(row.headers)).toEqual({})
    expect(row.state).toBe('pending')
    expect(Math.abs(row.created_at - before)).toBeLessThan(5_000)
    expect(row.available_at - row.created_at).toBe(1_000)
    expect(row.seq).toBeNull()
  } finally {
    await db.destroy()
    removeSqliteFile(file)
  }
})
