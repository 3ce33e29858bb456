import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Inspector, sqliteInspector, uniqueTableName, waitFor } from '@outboxkit/conformance'
import { createRelay, defineOutbox, isOutboxError, migrate, type Outbox } from '@outboxkit/core'
import { sqliteOutboxDdl } from '@outboxkit/core/adapter'
import { outboxMigrationSql, outboxPrismaModel, prismaDialect, publish, publishMany } from '@outboxkit/prisma'
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

class Rollback extends Error {}

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

async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string; cause?: any }> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err, 'expected a rejection').toBeInstanceOf(Error)
  return err as Error & { code?: string }
}

async function expectNotInTransaction(promise: Promise<unknown>, mentions: RegExp) {
  const err = await rejection(promise)
  expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), String(err)).toBe(true)
  expect(err.message).toContain('[outboxkit] [prisma]')
  expect(err.message).toMatch(mentions)
  return err
}

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
  test('root, transaction, $extends() transaction and nested transaction clients all say sqlite', async () => {
    expect(prismaDialect(prisma)).toBe('sqlite')
    await prisma.$transaction(async (tx) => {
      expect(prismaDialect(tx)).toBe('sqlite')
      await tx.$transaction(async (inner: unknown) => {
        expect(prismaDialect(inner)).toBe('sqlite')
      })
    })
    const xprisma = prisma.$extends({ client: { $tenant: () => 't1' } })
    await xprisma.$transaction(async (tx: unknown) => {
      expect(prismaDialect(tx)).toBe('sqlite')
    })
  })
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
    const before = await widgets()
    await expect(
      prisma.$transaction(async (tx) => {
        await tx.widget.create({ data: { name: 'w-rollback' } })
        await publishMany(outbox, tx, [
          { topic: 'accepted-rb', payload: 1 },
          { topic: 'accepted-rb', payload: 2, dedupKey: 'rb-1' },
        ])
        throw new Rollback('roll back')
      }),
    ).rejects.toThrow('roll back')
    expect(await widgets()).toBe(before)
    expect(await count(`topic = 'accepted-rb'`)).toBe(0)
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
    const backend = sqliteBackend({ filename: file })
    try {
      await migrate(ordered, backend)
    } finally {
      await backend.close()
    }
    const first = await prisma.$transaction((tx) =>
      publishMany(ordered, tx, [
        { topic: 'ledger', key: 'a', payload: 1 },
        { topic: 'ledger', key: 'a', payload: 2 },
        { topic: 'ledger', key: 'b', payload: 3 },
        { topic: 'other', key: 'a', payload: 4 },
      ]),
    )
    const second = await prisma.$transaction((tx) =>
      publish(ordered, tx, { topic: 'ledger', key: 'a', payload: 5 }),
    )
    const seqOf = async (id: string) =>
      (await inspector.query(`SELECT seq FROM "${ordered.table.name}" WHERE id = ?`, [id]))[0]!.seq
    expect(await Promise.all([...first, second].map((r) => seqOf(r.id)))).toEqual([1, 2, 1, null, 3])
  })
})

describe('what publish refuses on SQLite', () => {
  test('the root PrismaClient and a $extends() root client; nothing is written', async () => {
    const before = await count()
    for (const handle of [prisma, prisma.$extends({ client: { $x: () => 1 } })]) {
      await expectNotInTransaction(
        publish(outbox, handle as never, { topic: 'root', payload: 1 }),
        /a PrismaClient \(the root client or a \$extends\(\) client\)/,
      )
      await expectNotInTransaction(
        publishMany(outbox, handle as never, [{ topic: 'root', payload: 1 }]),
        /autocommit/,
      )
    }
    expect(await count()).toBe(before)
  })

  test('a tx kept after its transaction committed, or rolled back, by the scope marker', async () => {
    let escaped: any
    await prisma.$transaction(async (tx) => {
      escaped = tx
    })
    await expectNotInTransaction(
      publish(outbox, escaped, { topic: 'escaped', payload: 1 }),
      /already finished/,
    )
    await prisma
      .$transaction(async (tx) => {
        escaped = tx
        throw new Rollback('roll back')
      })
      .catch((e) => {
        if (!(e instanceof Rollback)) throw e
      })
    await expectNotInTransaction(
      publishMany(outbox, escaped, [{ topic: 'escaped', payload: 1 }]),
      /already finished/,
    )
    expect(await count(`topic = 'escaped'`)).toBe(0)
  })

  test('a nested tx kept after its savepoint ended, while the outer transaction goes on', async () => {
    const kept = await prisma.$transaction(async (tx) => {
      let nested: any
      await tx.$transaction(async (inner: unknown) => {
        nested = inner
      })
      await expectNotInTransaction(
        publish(outbox, nested, { topic: 'nested-escaped', payload: 1 }),
        /nested \$transaction client whose scope already finished/,
      )
      return publish(outbox, tx, { topic: 'nested-outer', payload: 1 })
    })
    expect(await count('id = ?', [kept.id])).toBe(1)
    expect(await count(`topic = 'nested-escaped'`)).toBe(0)
  })
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

  test('a missing table is a DATABASE error naming it', async () => {
    const missing = defineOutbox({ table: 'no_such_table' })
    const err = await rejection(prisma.$transaction((tx) => publish(missing, tx, { topic: 'x', payload: 1 })))
    expect(isOutboxError(err, 'DATABASE'), String(err)).toBe(true)
    expect(err.message).toMatch(/no_such_table/)
  })
})

describe('the SQLite outbox model and SQL for Prisma Migrate', () => {
  /** The declared column type Prisma Migrate gives a field on SQLite. */
  const declared: Record<string, string> = {
    String: 'TEXT',
    Int: 'INTEGER',
    BigInt: 'BIGINT',
    DateTime: 'DATETIME',
  }

  test('the shipped schema/outbox.sqlite.prisma and .sql are what the helpers return', () => {
    expect(readFileSync(shippedModelPathFor('sqlite'), 'utf8')).toBe(
      outboxPrismaModel(outbox, { provider: 'sqlite' }),
    )
    expect(readFileSync(shippedSqlPathFor('sqlite'), 'utf8')).toBe(
      outboxMigrationSql(outbox, { provider: 'sqlite' }),
    )
    expect(outboxMigrationSql(outbox, { provider: 'sqlite' })).toContain(sqliteOutboxDdl(outbox))
  })

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
    const { id } = await prisma.$transaction((tx) =>
      publish(outbox, tx, {
        topic: 'model',
        payload: { n: 1 },
        key: 'k',
        headers: { a: 'b' },
        dedupKey: 'model-1',
      }),
    )
    const row = await prisma.outboxMessage.findUnique({ where: { id } })
    expect(row).toMatchObject({
      id,
      topic: 'model',
      key: 'k',
      payload: '{"n":1}',
      headers: '{"a":"b"}',
      state: 'pending',
      attempts: 0,
      dedupKey: 'model-1',
      lastError: null,
      seq: null,
    })
    // Epoch milliseconds from SQLite's clock, as JS numbers.
    expect(typeof row.availableAt).toBe('number')
    expect(Math.abs(row.createdAt - Date.now())).toBeLessThan(60_000)
    expect((await prisma.outboxMessage.findUnique({ where: { dedupKey: 'model-1' } })).id).toBe(id)
  })

  test('a schema-qualified (attached database) table is INVALID_CONFIG for the model', () => {
    expect(() => outboxPrismaModel(defineOutbox({ table: 'aux.outbox' }), { provider: 'sqlite' })).toThrow(
      /attached database/,
    )
  })
})
