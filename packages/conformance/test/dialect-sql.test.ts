// The suites trust their raw SQL: this checks it on every database of the matrix (DIALECTS),
// through the exported inspectors, against a table made from core's own DDL for the dialect.
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineOutbox, outboxDdl } from '@outboxkit/core'
import { mysqlOutboxDdl, sqliteOutboxDdl } from '@outboxkit/core/adapter'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import {
  DIALECTS,
  type Inspector,
  mysqlInspector,
  type OutboxDialect,
  type OutboxSql,
  outboxSql,
  parseDialects,
  removeSqliteFile,
  serverInspector,
  sqliteInspector,
  uniqueTableName,
} from '../src/index.js'

describe('parseDialects (OUTBOXKIT_DIALECTS)', () => {
  test('unset or blank: all three, PostgreSQL first', () => {
    expect(parseDialects(undefined)).toEqual(['postgres', 'mysql', 'sqlite'])
    expect(parseDialects('  ')).toEqual(['postgres', 'mysql', 'sqlite'])
  })

  test('a comma list, trimmed and deduplicated, in the given order', () => {
    expect(parseDialects('sqlite, postgres,sqlite,')).toEqual(['sqlite', 'postgres'])
  })

  test('an unknown name throws instead of running nothing', () => {
    expect(() => parseDialects('postgres,mariadb')).toThrow(/unknown dialect "mariadb"/)
  })
})

describe.each(DIALECTS)('outboxSql on %s', (dialect: OutboxDialect) => {
  const table = uniqueTableName(`sql_${dialect}`)
  const outbox = defineOutbox({ table })
  const file = join(tmpdir(), `outboxkit-conformance-${process.pid}-${Date.now()}.db`)
  let inspector: Inspector
  let sql: OutboxSql

  beforeAll(async () => {
    inspector =
      dialect === 'postgres'
        ? serverInspector()
        : dialect === 'mysql'
          ? mysqlInspector()
          : sqliteInspector(file)
    const ddl =
      dialect === 'postgres'
        ? outboxDdl(outbox)
        : dialect === 'mysql'
          ? mysqlOutboxDdl(outbox)
          : sqliteOutboxDdl(outbox)
    for (const statement of ddl.split(/;\s*\n/).filter((s) => s.trim() !== ''))
      await inspector.query(statement)
    sql = outboxSql(dialect, (text, params) => inspector.query(text, params))
  })
  afterAll(async () => {
    await sql?.drop(table)
    await inspector?.close()
    if (dialect === 'sqlite') removeSqliteFile(file)
  })

  test('insert, rows and count read back every column as written', async () => {
    const before = await sql.nowMs()
    const [a, b] = await sql.insert(table, [
      { topic: 'x', key: 'k-ü', payload: { n: 1, s: '日本' }, state: 'dead', attempts: 3, lastError: 'boom' },
      { topic: 'y', payloadText: '{"raw":true}', availableInMs: 60_000, createdInMs: -5_000 },
    ])
    const after = await sql.nowMs()
    const ra = await sql.row(table, a!)
    expect(ra).toMatchObject({
      id: a,
      topic: 'x',
      key: 'k-ü',
      state: 'dead',
      attempts: 3,
      last_error: 'boom',
      dedup_key: null,
    })
    expect(JSON.parse(ra!.payload_text)).toEqual({ n: 1, s: '日本' })
    expect(JSON.parse(ra!.headers_text)).toEqual({})
    expect(ra!.available_at_ms).toBeGreaterThanOrEqual(Math.floor(before) - 1)
    expect(ra!.available_at_ms).toBeLessThanOrEqual(Math.ceil(after) + 1)
    const rb = await sql.row(table, b!)
    expect(rb).toMatchObject({ topic: 'y', key: null, state: 'pending', attempts: 0, last_error: null })
    expect(JSON.parse(rb!.payload_text)).toEqual({ raw: true })
    expect(rb!.due_in_ms).toBeGreaterThan(55_000)
    expect(rb!.due_in_ms).toBeLessThanOrEqual(60_000)
    expect(rb!.delay_ms).toBeGreaterThanOrEqual(65_000 - 2)
    expect(rb!.delay_ms).toBeLessThanOrEqual(65_000 + 2)
    expect(rb!.available_at_ms - rb!.created_at_ms).toBeGreaterThanOrEqual(65_000 - 2)
    expect((await sql.rows(table)).map((r) => r.id)).toEqual([a, b].sort())
    expect(await sql.count(table)).toBe(2)
    expect(await sql.count(table, { topic: 'x', state: 'dead' })).toBe(1)
    expect(await sql.count(table, { id: b!, state: 'dead' })).toBe(0)
    expect(await sql.rows(table, { topic: 'nothing' })).toEqual([])
  })

  test('update writes each change, and copies available_at exactly', async () => {
    const [a, b] = await sql.insert(table, [{ topic: 'u' }, { topic: 'u', availableInMs: -12_345 }])
    await sql.update(table, a!, { topic: 'v', attempts: 4, lastError: 'e', availableInMs: -1_000 })
    await sql.update(table, a!, { attempts: 'increment' })
    const ra = await sql.row(table, a!)
    expect(ra).toMatchObject({ topic: 'v', attempts: 5, last_error: 'e' })
    expect(ra!.due_in_ms).toBeLessThan(-900)
    expect(ra!.due_in_ms).toBeGreaterThan(-5_000)
    await sql.update(table, a!, { availableAtOf: b!, lastError: null })
    const [ra2, rb] = [await sql.row(table, a!), await sql.row(table, b!)]
    expect(ra2!.last_error).toBeNull()
    expect(ra2!.available_at_ms).toBe(rb!.available_at_ms)
    // Same to the microsecond: the two rows tie on available_at.
    expect(await sql.count(table, { topic: 'v' })).toBe(1)
    const ties = await inspector.query(
      `SELECT count(*) AS n FROM ${sql.ident(table)} a JOIN ${sql.ident(table)} b ON a.available_at = b.available_at WHERE a.id = ${sql.param(1)} AND b.id = ${sql.param(2)}`,
      [a, b],
    )
    expect(Number(ties[0]!.n)).toBe(1)
  })

  test('indexes lists the table indexes with their columns', async () => {
    const indexes = await sql.indexes(table)
    expect(indexes.length).toBeGreaterThanOrEqual(2)
    expect(indexes.every((i) => i.columns.length > 0 && i.columns.every((c) => c !== ''))).toBe(true)
    expect(indexes.some((i) => i.unique)).toBe(true)
  })

  test('clear empties the table; drop removes it', async () => {
    await sql.clear(table)
    expect(await sql.count(table)).toBe(0)
    const other = uniqueTableName(`sql_drop_${dialect}`)
    await inspector.query(`CREATE TABLE ${sql.ident(other)} (id INTEGER)`)
    await sql.drop(other)
    await sql.drop(other) // IF EXISTS
    await expect(inspector.query(`SELECT * FROM ${sql.ident(other)}`)).rejects.toThrow()
  })
})
