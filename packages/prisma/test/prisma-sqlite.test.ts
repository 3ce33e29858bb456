import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Inspector, rejection, sqliteInspector, uniqueTableName, waitFor } from '@outboxkit/conformance'
import { createRelay, defineOutbox, isOutboxError, migrate, type Outbox } from '@outboxkit/core'
import { sqliteOutboxDdl } from '@outboxkit/core/adapter'
import { outboxPrismaModel, publish } from '@outboxkit/prisma'
import { sqliteBackend } from '@outboxkit/sqlite'
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import {
  loadPrismaClient,
  shippedModelPathFor,
  shippedSqlPathFor,
  type TestPrismaClient,
} from './support/prisma-client.js'
import { parseModels } from './support/prisma-model.js'
import * as shared from './support/publish-tests.js'

// Generated (when missing) while the file is collected, outside any hook timeout.
const { PrismaClient } = await loadPrismaClient('sqlite')

const dir = mkdtempSync(join(tmpdir(), 'outboxkit-prisma-sqlite-'))
const file = join(dir, 'test.db')
let inspector: Inspector
let prisma: TestPrismaClient
const outbox: Outbox = defineOutbox({})

const count = async (where = '1', params: unknown[] = []) =>
  Number((await inspector.query(`SELECT count(*) AS n FROM outbox WHERE ${where}`, params))[0]!.n)
const widgets = async () => Number((await inspector.query('SELECT count(*) AS n FROM widget'))[0]!.n)

beforeAll(async () => {
  inspector = sqliteInspector(file)
  const setup = new Database(file)
  setup.exec(readFileSync(shippedSqlPathFor('sqlite'), 'utf8'))
  setup.exec('CREATE TABLE widget (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL)')
  setup.close()
  prisma = new PrismaClient({ adapter: new PrismaBetterSqlite3({ url: `file:${file}` }) })
})

afterAll(async () => {
  await prisma?.$disconnect()
  await inspector?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('the dialect comes from the Prisma client', () => {
  test('root, transaction, $extends() transaction and nested transaction clients all say sqlite', () =>
    shared.expectDialectEverywhere(prisma, 'sqlite'))
})

describe('publish on a SQLite transaction', () => {
  test('the message commits with the model writes, and rolls back with them', async () => {
    const { id } = await prisma.$transaction(async (tx) => {
      await tx.widget.create({ data: { name: 'w-commit' } })
      return publish(outbox, tx, { topic: 'accepted', payload: { w: 1 }, key: 'k1', headers: { h: 'v' } })
    })
    expect(
      await inspector.query('SELECT topic, key, payload, headers FROM outbox WHERE id = ?', [id]),
    ).toEqual([{ topic: 'accepted', key: 'k1', payload: '{"w":1}', headers: '{"h":"v"}' }])
    await shared.expectRollbackWithModelWrites(prisma, outbox, { count, widgets })
  })

  test('a relay of this process is woken once Prisma committed, long before its next poll', async () => {
    const table = uniqueTableName('prisma_wake')
    const woken = defineOutbox({ table })
    const backend = sqliteBackend({ filename: file })
    const delivered: unknown[] = []
    const relay = createRelay(woken, {
      backend,
      handlers: { wake: async (m) => void delivered.push(m.payload) },
      pollIntervalMs: 600_000,
    })
    try {
      await migrate(woken, backend)
      await relay.start() // its first claim finds nothing; the next poll is 10 minutes away
      await prisma.$transaction((tx) => publish(woken, tx, { topic: 'wake', payload: 'now' }))
      await waitFor(() => delivered.length === 1, { timeoutMs: 10_000, what: 'the woken relay to deliver' })
      expect(delivered).toEqual(['now'])
    } finally {
      await relay.stop({ graceMs: 1_000 })
      await backend.close()
      await inspector.query(`DROP TABLE IF EXISTS "${table}"`)
    }
  })
})

describe('ordered topics on SQLite', () => {
  test('messages of an ordered topic are numbered per key, in commit order', async () => {
    const ordered = defineOutbox({ table: uniqueTableName('prisma_seq'), orderedTopics: ['ledger'] })
    await shared.expectOrderedSeq(prisma, ordered, {
      backend: sqliteBackend({ filename: file }),
      seqOf: async (id) =>
        (await inspector.query(`SELECT seq FROM "${ordered.table.name}" WHERE id = ?`, [id]))[0]!.seq,
    })
  })
})

describe('what publish refuses on SQLite', () => {
  shared.testKeptHandleRefusals(() => prisma, outbox, count)
})

describe('errors while writing on SQLite', () => {
  test("another connection's write lock past the busy timeout becomes TIMEOUT; nothing is written", async () => {
    const impatient = new PrismaClient({
      adapter: new PrismaBetterSqlite3({ url: `file:${file}`, timeout: 100 }),
    })
    const locker = new Database(file)
    try {
      locker.exec('BEGIN IMMEDIATE')
      const err = await rejection(
        impatient.$transaction((tx) => publish(outbox, tx, { topic: 'busy', payload: 1 })),
      )
      expect(isOutboxError(err, 'TIMEOUT'), String(err)).toBe(true)
      expect(err.message).toContain('[outboxkit] [prisma]')
    } finally {
      locker.exec('ROLLBACK')
      locker.close()
      await impatient.$disconnect()
    }
    expect(await count(`topic = 'busy'`)).toBe(0)
  })

  test('a missing table is a DATABASE error naming it', () =>
    shared.expectMissingTableError(prisma, defineOutbox({ table: 'no_such_table' })))
})

describe('the SQLite outbox model and SQL for Prisma Migrate', () => {
  /** The declared column type Prisma Migrate gives a field on SQLite. */
  const declared: Record<string, string> = {
    String: 'TEXT',
    Int: 'INTEGER',
    BigInt: 'BIGINT',
    DateTime: 'DATETIME',
  }

  test('the shipped schema/outbox.sqlite.prisma and .sql are what the helpers return', () =>
    shared.expectShippedFiles('sqlite', outbox, sqliteOutboxDdl(outbox)))

  test('the table the shipped SQL creates has the columns, declared types, nullability and indexes the model declares', async () => {
    const [model] = parseModels(readFileSync(shippedModelPathFor('sqlite'), 'utf8'))
    expect(model!.table).toBe('outbox')
    const columns = await inspector.query<{ name: string; type: string; notnull: number; pk: number }>(
      `SELECT name, type, "notnull", pk FROM pragma_table_info('outbox') ORDER BY cid`,
    )
    expect(
      columns.map((c) => ({ column: c.name, type: c.type, nullable: c.notnull === 0 && c.pk === 0 })),
    ).toEqual(model!.fields.map((f) => ({ column: f.column, type: declared[f.type], nullable: f.optional })))
    expect(columns.filter((c) => c.pk > 0).map((c) => c.name)).toEqual([model!.id])
    const indexes = await inspector.query<{ name: string; unique: number; origin: string }>(
      `SELECT name, "unique", origin FROM pragma_index_list('outbox') WHERE origin = 'c' ORDER BY name`,
    )
    const described = []
    for (const i of indexes) {
      const cols = await inspector.query<{ name: string }>(
        `SELECT name FROM pragma_index_info(?) ORDER BY seqno`,
        [i.name],
      )
      described.push({ name: i.name, unique: i.unique === 1, columns: cols.map((c) => c.name) })
    }
    expect(described).toEqual([...model!.indexes].sort((a, b) => a.name.localeCompare(b.name)))
  })

  test('Prisma Client reads a published message through the shipped model', async () => {
    const row = await shared.readPublishedThroughModel(prisma, outbox, {
      payload: '{"n":1}',
      headers: '{"a":"b"}',
    })
    // Epoch milliseconds from SQLite's clock, as JS numbers.
    expect(typeof row.availableAt).toBe('number')
    expect(Math.abs(row.createdAt - Date.now())).toBeLessThan(60_000)
    expect((await prisma.outboxMessage.findUnique({ where: { dedupKey: 'model-1' } })).id).toBe(row.id)
  })

  test('a schema-qualified (attached database) table is INVALID_CONFIG for the model', () => {
    expect(() => outboxPrismaModel(defineOutbox({ table: 'aux.outbox' }), { provider: 'sqlite' })).toThrow(
      /attached database/,
    )
  })
})
