import { defineOutbox, migrate } from '@outboxkit/core'
import { outboxSqliteTable, publish } from '@outboxkit/drizzle'
import { sqliteBackend } from '@outboxkit/sqlite'
import type Database from 'better-sqlite3'
import { generateSQLiteDrizzleJson, generateSQLiteMigration } from 'drizzle-kit/api'
import { eq, getTableName } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { afterAll, describe, expect, test } from 'vitest'
import { tempDrizzleSqlite } from './sqlite-support.js'
import { expectNamesRefused, expectTypedRow, kitTableNames, TYPED_MESSAGE } from './support/outbox-table.js'

// Two files of our own: `migrate` creates a table in one, drizzle-kit's SQL the same table in the other.
const viaMigrate = tempDrizzleSqlite('drizzle_kit_sm')
const viaKit = tempDrizzleSqlite('drizzle_kit_sk')
afterAll(() => {
  viaMigrate.cleanup()
  viaKit.cleanup()
})

/** The SQL `drizzle-kit generate` writes for these schema exports, from an empty database. */
async function drizzleKitSql(exports: Record<string, unknown>): Promise<string[]> {
  return generateSQLiteMigration(
    await generateSQLiteDrizzleJson({}),
    await generateSQLiteDrizzleJson(exports),
  )
}

/** The text of a partial index's WHERE, without quotes and extra spaces. */
const whereOf = (sql: string | null) =>
  (sql ?? '')
    .replace(/^[\s\S]*?\bWHERE\b/i, '')
    .replace(/["`]/g, '')
    .replace(/\s+/g, ' ')
    .trim()

/**
 * Everything about a table that matters: columns (declared type, nullability, default, primary
 * key), indexes (unique, partial, columns, WHERE) and whether the `state` check holds.
 */
function describeTable(db: Database.Database, table: string) {
  const columns = (db.pragma(`table_xinfo("${table}")`) as Record<string, unknown>[]).map((c) => ({
    ...c,
    // SQLite keeps the declared type as written: its case does not matter.
    type: String(c.type).toUpperCase(),
  }))
  const indexes = (
    db.pragma(`index_list("${table}")`) as { name: string; unique: number; origin: string; partial: number }[]
  )
    .map((i) => ({
      ...i,
      seq: undefined,
      columns: (db.pragma(`index_info("${i.name}")`) as { name: string }[]).map((c) => c.name),
      where: whereOf(
        (db
          .prepare('SELECT sql FROM sqlite_master WHERE type = ? AND name = ?')
          .pluck()
          .get('index', i.name) ?? null) as string | null,
      ),
    }))
    .sort((a, b) => a.name.localeCompare(b.name))
  let stateChecked = false
  try {
    db.prepare(`INSERT INTO "${table}" (id, topic, payload, state) VALUES ('x', 't', '1', 'bogus')`).run()
    db.prepare(`DELETE FROM "${table}" WHERE id = 'x'`).run()
  } catch (e) {
    stateChecked = /CHECK constraint failed/.test(String(e))
  }
  return { columns, indexes, stateChecked }
}

describe('outboxSqliteTable and drizzle-kit', () => {
  for (const [label, name] of kitTableNames('a 63-byte name (index names clipped as migrate clips them)')) {
    test(`drizzle-kit generates the table migrate creates: ${label}`, async () => {
      await migrate(defineOutbox({ table: name }), sqliteBackend(viaMigrate.client))
      const statements = await drizzleKitSql({ outbox: outboxSqliteTable(name) })
      expect(statements.join('\n')).toContain(`CREATE TABLE \`${name}\``)
      for (const s of statements) viaKit.client.exec(s)
      const expected = describeTable(viaMigrate.client, name)
      expect(expected.columns).toHaveLength(12)
      expect(expected.indexes.filter((i) => i.partial === 1)).toHaveLength(4)
      expect(expected.stateChecked).toBe(true)
      expect(describeTable(viaKit.client, name)).toEqual(expected)
    })
  }

  test('Drizzle queries the outbox with typed columns (JSON parsed, epoch ms as Date)', async () => {
    const outbox = defineOutbox({ table: 'typed_outbox' })
    const rows = outboxSqliteTable(outbox)
    expect(getTableName(rows)).toBe('typed_outbox')
    await migrate(outbox, sqliteBackend(viaMigrate.client))
    const db = drizzle({ client: viaMigrate.client })
    let pending: ReturnType<typeof publish> | undefined
    db.transaction((tx) => {
      pending = publish(outbox, tx, TYPED_MESSAGE)
    })
    const { id } = await pending!
    const [row] = db.select().from(rows).where(eq(rows.id, id)).all()
    expectTypedRow(row, id)
    expect(Math.abs(row!.createdAt.getTime() - Date.now())).toBeLessThan(60_000)
    expect(row!.availableAt.getTime() - row!.createdAt.getTime()).toBe(1000)
  })

  test('names defineOutbox refuses, and schema-qualified names, are refused with INVALID_CONFIG', () => {
    const qualified = ['main.outbox', defineOutbox({ table: 'aux.outbox' })]
    expectNamesRefused([outboxSqliteTable], ['', 'a.b.c', 'bad-name', 42, null, ...qualified])
  })
})
