import { serverInspector, testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import { defineOutbox, migrate } from '@outboxkit/core'
import { OUTBOX_STATES, outboxTable, publish } from '@outboxkit/drizzle'
import { pgBackend } from '@outboxkit/pg'
import { generateDrizzleJson, generateMigration, pushSchema } from 'drizzle-kit/api'
import { eq, getTableName } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import { getTableConfig } from 'drizzle-orm/pg-core'
import pg from 'pg'
import { describe, expect, test } from 'vitest'
import { outboxSequence } from '../src/outbox-table.js'
import {
  expectNamesRefused,
  expectTypedRow,
  kitTableNames,
  TYPED_MESSAGE,
  useMigrateAndKitNamespaces,
} from './support/outbox-table.js'

const url = testDatabaseUrl()
const inspector = serverInspector()
const pool = new pg.Pool({ connectionString: url, max: 4 })
const backend = pgBackend({ pool })
// Two schemas of our own: `migrate` creates a table in one, drizzle-kit's SQL the same table in the other.
const { viaMigrate, viaKit } = useMigrateAndKitNamespaces(inspector, 'SCHEMA', () => pool.end())

/** The SQL `drizzle-kit generate` writes for these schema exports, from an empty database. */
async function drizzleKitSql(exports: Record<string, unknown>): Promise<string[]> {
  return generateMigration(generateDrizzleJson({}), generateDrizzleJson(exports))
}

/** Runs statements on one connection, with `search_path` set to `schema` for unqualified names. */
async function runIn(schema: string, statements: string[]): Promise<void> {
  const client = await pool.connect()
  try {
    await client.query(`SET search_path TO ${schema}`)
    for (const s of statements) await client.query(s)
  } finally {
    await client.query('RESET search_path')
    client.release()
  }
}

/** Everything about a table that matters, with its schema name taken out. */
async function describeTable(schema: string, table: string) {
  const strip = (s: unknown) => String(s).replaceAll(`${schema}.`, '')
  const columns = await inspector.query(
    `SELECT column_name, ordinal_position, data_type, is_nullable, column_default
     FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
    [schema, table],
  )
  const constraints = await inspector.query(
    `SELECT conname, contype, pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
     JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
     WHERE n.nspname = $1 AND t.relname = $2 ORDER BY conname`,
    [schema, table],
  )
  const indexes = await inspector.query(
    `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 ORDER BY indexname`,
    [schema, table],
  )
  return {
    columns,
    constraints,
    indexes: indexes.map((i) => ({ indexname: i.indexname, indexdef: strip(i.indexdef) })),
  }
}

describe('outboxTable and drizzle-kit', () => {
  for (const [label, name] of kitTableNames(
    'a 63-byte name (derived names are clipped as PostgreSQL clips them)',
  )) {
    test(`drizzle-kit generates the table migrate creates: ${label}`, async () => {
      await migrate(defineOutbox({ table: `${viaMigrate}.${name}` }), backend)
      const statements = await drizzleKitSql({ outbox: outboxTable(name) })
      expect(statements.join('\n')).toContain(`CREATE TABLE "${name}"`)
      await runIn(viaKit, statements)
      const expected = await describeTable(viaMigrate, name)
      expect(expected.columns).toHaveLength(12)
      expect(expected.indexes).toHaveLength(5)
      expect(await describeTable(viaKit, name)).toEqual(expected)
    })
  }

  test('a schema-qualified outbox: outboxTable("schema.table") and outboxTable(outbox)', async () => {
    const name = 'orders_outbox'
    const outbox = defineOutbox({ table: `${viaMigrate}.${name}` })
    await migrate(outbox, backend)
    const fromOutbox = outboxTable(outbox)
    expect(getTableConfig(fromOutbox).schema).toBe(viaMigrate)
    expect(getTableName(fromOutbox)).toBe(name)
    const statements = await drizzleKitSql({ outbox: outboxTable(`${viaKit}.${name}`) })
    expect(statements.join('\n')).toContain(`CREATE TABLE "${viaKit}"."${name}"`)
    await runIn('public', statements)
    expect(await describeTable(viaKit, name)).toEqual(await describeTable(viaMigrate, name))
  })

  test('outboxSequence: drizzle-kit creates the sequence of ordered topics as migrate does', async () => {
    const name = 'orders_seq_outbox'
    await migrate(defineOutbox({ table: `${viaMigrate}.${name}` }), backend)
    const statements = await drizzleKitSql({
      outbox: outboxTable(`${viaKit}.${name}`),
      outboxSeq: outboxSequence(`${viaKit}.${name}`),
    })
    expect(statements.join('\n')).toContain(`CREATE SEQUENCE "${viaKit}"."${name}_seq_seq"`)
    await runIn('public', statements)
    const sequence = async (schema: string) =>
      inspector.query(
        `SELECT sequencename, data_type::text, start_value, min_value, max_value, increment_by, cycle, cache_size
         FROM pg_sequences WHERE schemaname = $1`,
        [schema],
      )
    const expected = await sequence(viaMigrate)
    expect(expected.map((s) => s.sequencename)).toContain(`${name}_seq_seq`)
    expect((await sequence(viaKit)).filter((s) => s.sequencename === `${name}_seq_seq`)).toEqual(
      expected.filter((s) => s.sequencename === `${name}_seq_seq`),
    )
    expect(await describeTable(viaKit, name)).toEqual(await describeTable(viaMigrate, name))
  })

  test('drizzle-kit push sees no difference from a table migrate created', async () => {
    const name = uniqueTableName('drizzle_push')
    await migrate(defineOutbox({ table: name }), backend)
    try {
      const { statementsToExecute } = await pushSchema(
        { outbox: outboxTable(name) },
        drizzle({ client: pool }) as never,
        ['public'],
        [name],
      )
      expect(statementsToExecute.filter((s) => s.includes(name))).toEqual([])
    } finally {
      await inspector.query(`DROP TABLE IF EXISTS ${name}`)
    }
  })

  test('Drizzle queries the outbox with typed columns', async () => {
    const name = uniqueTableName('drizzle_typed')
    const outbox = defineOutbox({ table: name })
    const rows = outboxTable(outbox)
    await migrate(outbox, backend)
    try {
      // A db with a relational schema: its tx type is what publish accepts too.
      const db = drizzle({ client: pool, schema: { rows } })
      const { id } = await db.transaction((tx) => publish(outbox, tx, TYPED_MESSAGE))
      const [row] = await db.select().from(rows).where(eq(rows.id, id))
      expectTypedRow(row, id)
      expect(OUTBOX_STATES).toContain(row!.state)
      expect(row!.availableAt.getTime() - row!.createdAt.getTime()).toBeGreaterThanOrEqual(900)
      expect(row!.lastError).toBeNull()
    } finally {
      await inspector.query(`DROP TABLE IF EXISTS ${name}`)
    }
  })

  test('names defineOutbox refuses are refused with INVALID_CONFIG', () => {
    expectNamesRefused(
      [outboxTable],
      ['', 'a.b.c', 'bad-name', '1abc', 'x'.repeat(64), 42, null, { table: 'outbox' }],
    )
  })
})
