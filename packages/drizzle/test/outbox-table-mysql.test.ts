import { mysqlInspector, testMysqlUri, uniqueTableName } from '@outboxkit/conformance'
import { defineOutbox, migrate } from '@outboxkit/core'
import { outboxMysqlKeysTable, outboxMysqlTable, publish } from '@outboxkit/drizzle'
import { mysqlBackend } from '@outboxkit/mysql'
import { generateMySQLDrizzleJson, generateMySQLMigration } from 'drizzle-kit/api'
import { eq, getTableName } from 'drizzle-orm'
import { getTableConfig } from 'drizzle-orm/mysql-core'
import { drizzle } from 'drizzle-orm/mysql2'
import mysql from 'mysql2/promise'
import { describe, expect, test } from 'vitest'
import {
  expectNamesRefused,
  expectTypedRow,
  kitTableNames,
  TYPED_MESSAGE,
  useMigrateAndKitNamespaces,
} from './support/outbox-table.js'

const uri = testMysqlUri()
const inspector = mysqlInspector()
const pool = mysql.createPool({ uri, connectionLimit: 4, charset: 'utf8mb4' })
const backend = mysqlBackend({ pool })
// Two databases of our own: `migrate` creates a table in one, drizzle-kit's SQL the same table in the other.
const { viaMigrate, viaKit } = useMigrateAndKitNamespaces(inspector, 'DATABASE', () => pool.end())

/** The SQL `drizzle-kit generate` writes for these schema exports, from an empty database. */
async function drizzleKitSql(exports: Record<string, unknown>): Promise<string[]> {
  return generateMySQLMigration(await generateMySQLDrizzleJson({}), await generateMySQLDrizzleJson(exports))
}

/** Runs statements on a connection whose default database is `database`. */
async function runIn(database: string, statements: string[]): Promise<void> {
  const conn = await mysql.createConnection({ uri, database })
  try {
    for (const s of statements) await conn.query(s)
  } finally {
    await conn.end()
  }
}

/**
 * Everything about a table that matters: columns (type, character set, collation, nullability,
 * default, generation), indexes and constraints. Not the table's default collation, which only
 * applies to columns added later (drizzle-kit leaves it to the database's default).
 */
async function describeTable(database: string, table: string) {
  const columns = await inspector.query(
    `SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, IS_NULLABLE, COLUMN_TYPE, CHARACTER_SET_NAME,
            COLLATION_NAME, EXTRA, GENERATION_EXPRESSION, COLUMN_KEY
     FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
    [database, table],
  )
  const indexes = await inspector.query(
    `SELECT INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX, COLUMN_NAME FROM information_schema.STATISTICS
     WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX`,
    [database, table],
  )
  // MariaDB names CHECK constraints per table (its JSON columns get one named after the column),
  // and says which table in CHECK_CONSTRAINTS.TABLE_NAME; MySQL names them per database.
  const [perTable] = await inspector.query<{ n: number }>(
    `SELECT count(*) AS n FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = 'information_schema' AND TABLE_NAME = 'CHECK_CONSTRAINTS' AND COLUMN_NAME = 'TABLE_NAME'`,
  )
  const constraints = await inspector.query(
    `SELECT tc.CONSTRAINT_NAME, tc.CONSTRAINT_TYPE, cc.CHECK_CLAUSE FROM information_schema.TABLE_CONSTRAINTS tc
     LEFT JOIN information_schema.CHECK_CONSTRAINTS cc
       ON cc.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND cc.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
       ${Number(perTable!.n) > 0 ? 'AND cc.TABLE_NAME = tc.TABLE_NAME' : ''}
     WHERE tc.TABLE_SCHEMA = ? AND tc.TABLE_NAME = ? ORDER BY tc.CONSTRAINT_NAME, tc.CONSTRAINT_TYPE`,
    [database, table],
  )
  return { columns, indexes, constraints }
}

async function dropAll(...tables: string[]): Promise<void> {
  for (const t of tables) await inspector.query(`DROP TABLE IF EXISTS ${t}`)
}

describe('outboxMysqlTable and drizzle-kit', () => {
  for (const [label, name] of kitTableNames(
    'a 63-character name (derived names are clipped as migrate clips them)',
  )) {
    test(`drizzle-kit generates the table migrate creates: ${label}`, async () => {
      await migrate(defineOutbox({ table: `${viaMigrate}.${name}` }), backend)
      const statements = await drizzleKitSql({ outbox: outboxMysqlTable(name) })
      expect(statements.join('\n')).toContain(`CREATE TABLE \`${name}\``)
      await runIn(viaKit, statements)
      try {
        const expected = await describeTable(viaMigrate, name)
        expect(expected.columns).toHaveLength(15)
        expect(expected.indexes.map((i) => i.INDEX_NAME)).toContain('PRIMARY')
        expect(await describeTable(viaKit, name)).toEqual(expected)
      } finally {
        await dropAll(`${viaMigrate}.${name}`, `${viaKit}.${name}`)
      }
    })
  }

  test('outboxMysqlKeysTable: the companion table of ordered keys, as migrate creates it', async () => {
    const outbox = defineOutbox({ table: `${viaMigrate}.ordered_outbox`, orderedTopics: ['ledger'] })
    await migrate(outbox, backend)
    const statements = await drizzleKitSql({
      outbox: outboxMysqlTable('ordered_outbox'),
      keys: outboxMysqlKeysTable('ordered_outbox'),
    })
    await runIn(viaKit, statements)
    try {
      for (const t of ['ordered_outbox', 'ordered_outbox_keys']) {
        const expected = await describeTable(viaMigrate, t)
        expect(expected.columns.length, t).toBeGreaterThan(0)
        expect(await describeTable(viaKit, t), t).toEqual(expected)
      }
      expect(getTableName(outboxMysqlKeysTable(outbox))).toBe('ordered_outbox_keys')
      expect(getTableConfig(outboxMysqlKeysTable(outbox)).schema).toBe(viaMigrate)
    } finally {
      await dropAll(
        `${viaMigrate}.ordered_outbox_keys`,
        `${viaMigrate}.ordered_outbox`,
        `${viaKit}.ordered_outbox_keys`,
        `${viaKit}.ordered_outbox`,
      )
    }
  })

  test('a database-qualified outbox: outboxMysqlTable("db.table") and outboxMysqlTable(outbox)', () => {
    const outbox = defineOutbox({ table: `${viaMigrate}.orders_outbox` })
    const t = outboxMysqlTable(outbox)
    expect(getTableConfig(t).schema).toBe(viaMigrate)
    expect(getTableName(t)).toBe('orders_outbox')
    expect(getTableConfig(outboxMysqlTable('orders_outbox')).schema).toBeUndefined()
  })

  test('Drizzle queries the outbox with typed columns (JSON parsed on MariaDB too, UTC dates)', async () => {
    const name = uniqueTableName('drizzle_mtyped')
    const outbox = defineOutbox({ table: name })
    const rows = outboxMysqlTable(outbox)
    await migrate(outbox, backend)
    try {
      const db = drizzle({ client: pool })
      const { id } = await db.transaction((tx) => publish(outbox, tx, TYPED_MESSAGE))
      const [row] = await db.select().from(rows).where(eq(rows.id, id))
      expectTypedRow(row, id)
      const [now] = await inspector.query<{ ms: number }>(
        'SELECT CAST(TIMESTAMPDIFF(MICROSECOND, "1970-01-01", UTC_TIMESTAMP(6)) / 1000 AS DOUBLE) AS ms',
      )
      expect(Math.abs(row!.createdAt.getTime() - now!.ms)).toBeLessThan(60_000)
      expect(row!.availableAt.getTime() - row!.createdAt.getTime()).toBeGreaterThanOrEqual(999)
      expect(row!.dueAt?.getTime()).toBe(row!.availableAt.getTime())
      expect(row!.lastError).toBeNull()
    } finally {
      await dropAll(name)
    }
  })

  test('names defineOutbox refuses are refused with INVALID_CONFIG', () => {
    expectNamesRefused([outboxMysqlTable, outboxMysqlKeysTable], ['', 'a.b.c', 'bad-name', 42, null])
  })
})
