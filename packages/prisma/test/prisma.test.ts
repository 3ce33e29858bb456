import { readFileSync } from 'node:fs'
import { rejection, serverInspector, testDatabaseUrl, uniqueTableName, waitFor } from '@outboxkit/conformance'
import { defineOutbox, isOutboxError, type Outbox, outboxDdl } from '@outboxkit/core'
import { outboxMigrationSql, outboxPrismaModel, prismaDialect, publish, publishMany } from '@outboxkit/prisma'
import { PrismaPg } from '@prisma/adapter-pg'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { mapPrismaError } from '../src/prisma-errors.js'
import {
  loadPrismaClient,
  shippedModelPath,
  shippedSqlPath,
  type TestPrismaClient,
} from './support/prisma-client.js'
import * as shared from './support/publish-tests.js'

// Generated (when missing) while the file is collected, outside any hook timeout.
const { PrismaClient } = await loadPrismaClient()

const inspector = serverInspector()
// Every table of this file lives in a schema of its own; Prisma's model queries go there through
// the adapter's `schema` option, and the outbox is defined schema-qualified.
const schema = uniqueTableName('prisma_schema')
const outbox: Outbox = defineOutbox({ table: `${schema}.outbox` })
const T = `"${schema}".outbox`
let prisma: TestPrismaClient
/** Every statement sent on the adapter's pooled connections, in order. */
const sent: string[] = []

const count = async (where = 'true', params: unknown[] = []) =>
  Number((await inspector.query(`SELECT count(*)::int AS n FROM ${T} WHERE ${where}`, params))[0]!.n)
const widgets = async () =>
  Number((await inspector.query(`SELECT count(*)::int AS n FROM "${schema}".widget`))[0]!.n)

beforeAll(async () => {
  const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 10 })
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    ;(client as unknown as { query: unknown }).query = (...args: unknown[]) => {
      const q = args[0] as string | { text: string }
      sent.push(typeof q === 'string' ? q : q.text)
      return query(...args)
    }
  })
  prisma = new PrismaClient({ adapter: new PrismaPg(pool, { schema, disposeExternalPool: true }) })
  await inspector.query(`CREATE SCHEMA "${schema}"`)
  await inspector.query(outboxMigrationSql(outbox))
  await inspector.query(`CREATE TABLE "${schema}".widget (id serial PRIMARY KEY, name text NOT NULL)`)
})

afterAll(async () => {
  await inspector.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {})
  await prisma?.$disconnect()
  await inspector.close()
})

describe('which handles publish accepts', () => {
  test('the dialect comes from the client: postgres for the root, transaction and nested transaction clients', async () => {
    await shared.expectDialectEverywhere(prisma, 'postgres')
    expect(prismaDialect(null)).toBeUndefined()
    expect(prismaDialect({ $queryRawUnsafe: () => Promise.resolve([]) })).toBeUndefined()
  })

  test('the tx of an interactive transaction: the message commits with the model writes', async () => {
    const { id } = await prisma.$transaction(async (tx) => {
      await tx.widget.create({ data: { name: 'w-commit' } })
      return publish(outbox, tx, { topic: 'accepted', payload: { w: 1 } })
    })
    expect(await count('id = $1', [id])).toBe(1)
    const before = await widgets()
    await expect(
      prisma.$transaction(async (tx) => {
        await tx.widget.create({ data: { name: 'w-rollback' } })
        await publish(outbox, tx, { topic: 'accepted-rb', payload: 1 })
        throw new shared.Rollback('roll back')
      }),
    ).rejects.toThrow('roll back')
    expect(await widgets()).toBe(before)
    expect(await count(`topic = 'accepted-rb'`)).toBe(0)
  })

  test('the tx of a $extends() client (client and query extensions) commits and rolls back with it', async () => {
    const seen: string[] = []
    const xprisma = prisma.$extends({
      client: { $tenant: () => 't1' },
      query: {
        $allOperations({ operation, args, query }: shared.AllOperations) {
          seen.push(operation)
          return query(args)
        },
      },
    })
    const { id } = await xprisma.$transaction(async (tx: any) => {
      expect(tx.$tenant()).toBe('t1')
      await tx.widget.create({ data: { name: 'w-ext' } })
      return publish(outbox, tx, { topic: 'extended', payload: 1 })
    })
    expect(await count('id = $1', [id])).toBe(1)
    expect(seen).toContain('$queryRawUnsafe')
    await expect(
      xprisma.$transaction(async (tx: any) => {
        await publishMany(outbox, tx, [
          { topic: 'extended-rb', payload: 1 },
          { topic: 'extended-rb', payload: 2 },
        ])
        throw new shared.Rollback('roll back')
      }),
    ).rejects.toThrow('roll back')
    expect(await count(`topic = 'extended-rb'`)).toBe(0)
  })

  test('publish and publishMany each send exactly one statement on the transaction connection', async () => {
    await prisma.$transaction(async (tx) => {
      sent.length = 0
      await publish(outbox, tx, { topic: 'rt', payload: 1, dedupKey: 'rt-1' })
      expect(sent).toHaveLength(1)
      expect(sent[0]).toContain(`INSERT INTO "${schema}"."outbox"`)
      sent.length = 0
      await publishMany(outbox, tx, [
        { topic: 'rt', payload: 2 },
        { topic: 'rt', payload: 3 },
      ])
      expect(sent).toHaveLength(1)
      expect(sent[0]).toContain('unnest($1::uuid[]')
    })
  })

  test('arrays with nulls and fractional delays bind through @prisma/adapter-pg; results are typed', async () => {
    const messages = [
      { topic: 'arrays', payload: { a: [1, null, 'x'] }, key: 'k1', dedupKey: 'arr-1', delayMs: 1500.5 },
      { topic: 'arrays', payload: null, delayMs: 0 },
      { topic: 'arrays', payload: 'text', key: 'k3', headers: { h: 'v' }, delayMs: 2.25 },
      { topic: 'arrays', payload: 4, dedupKey: 'arr-1' },
    ]
    const results = await prisma.$transaction((tx) => publishMany(outbox, tx, messages))
    expect(results.map((r: { published: boolean }) => r.published)).toEqual([true, true, true, false])
    expect(results[3].id).toBe(results[0].id)
    for (const r of results) expect(typeof r.id).toBe('string')
    const rows = await inspector.query<Record<string, unknown>>(
      `SELECT id::text AS id, key, dedup_key, payload::text AS payload, headers::text AS headers,
              extract(epoch FROM available_at - created_at) * 1000 AS delay
       FROM ${T} WHERE topic = 'arrays' ORDER BY id`,
    )
    expect(rows.map((r) => r.id)).toEqual(results.slice(0, 3).map((r: { id: string }) => r.id))
    expect(rows.map((r) => r.key)).toEqual(['k1', null, 'k3'])
    expect(rows.map((r) => r.dedup_key)).toEqual(['arr-1', null, null])
    expect(rows.map((r) => JSON.parse(r.payload as string))).toEqual([{ a: [1, null, 'x'] }, null, 'text'])
    expect(JSON.parse(rows[2]!.headers as string)).toEqual({ h: 'v' })
    expect(Number(rows[0]!.delay)).toBeCloseTo(1500.5, 0)
    expect(Number(rows[2]!.delay)).toBeCloseTo(2.25, 1)
    const [single] = await prisma.$transaction((tx) =>
      Promise.all([publish(outbox, tx, { topic: 'arrays', payload: 5, dedupKey: 'arr-1' })]),
    )
    expect(single).toEqual({ id: results[0].id, published: false })
  })
})

describe('what publish refuses', () => {
  test('the root PrismaClient and a $extends() root client, naming them; nothing is written', () =>
    shared.expectRootClientsRefused(prisma, outbox, count))

  test('a tx kept after its transaction committed, or rolled back: refused before anything is sent', () =>
    shared.expectEscapedTxRefused(prisma, outbox, {
      count,
      sent,
      inRollback: (tx) => tx.widget.create({ data: { name: 'w-escaped' } }),
    }))

  test("Prisma's own P2028 (transaction closed, thrown before sending) maps to NOT_IN_TRANSACTION", async () => {
    let escaped: any
    await prisma.$transaction(async (tx) => {
      escaped = tx
    })
    // The error Prisma itself raises on the escaped client, before any SQL is sent.
    sent.length = 0
    const p2028 = await rejection(escaped.$queryRawUnsafe('SELECT 1'))
    expect(sent).toEqual([])
    expect(p2028.code).toBe('P2028')
    expect(p2028.message).toMatch(/Transaction already closed/)
    const mapped = mapPrismaError(p2028)
    expect(isOutboxError(mapped, 'NOT_IN_TRANSACTION')).toBe(true)
    expect(mapped!.message).toMatch(/Transaction already closed/)
    expect(mapped!.cause).toBe(p2028)
  })

  test('a tx whose transaction expired (Prisma timeout) while its callback still runs: P2028, refused, nothing written', async () => {
    let outcome: Error | undefined
    const finished = prisma
      .$transaction(
        async (tx) => {
          // Wait until Prisma has rolled the transaction back on its timeout (it reports P2028).
          await waitFor(
            () =>
              tx.$queryRawUnsafe('SELECT 1').then(
                () => false,
                (e: { code?: string }) => e.code === 'P2028',
              ),
            { what: 'the transaction to expire' },
          )
          outcome = await rejection(publish(outbox, tx, { topic: 'expired', payload: 1 }))
        },
        { timeout: 300 },
      )
      .catch(() => {})
    await finished
    expect(isOutboxError(outcome, 'NOT_IN_TRANSACTION'), String(outcome)).toBe(true)
    expect(outcome!.message).toMatch(/expired transaction/)
    expect(await count(`topic = 'expired'`)).toBe(0)
  })

  test('a transaction that already failed (25P02) is refused; nothing is written', async () => {
    await prisma
      .$transaction(async (tx) => {
        await expect(tx.$queryRawUnsafe('SELECT 1/0')).rejects.toMatchObject({ code: 'P2010' })
        await shared.expectNotInTransaction(
          publish(outbox, tx, { topic: 'failed', payload: 1 }),
          /already failed/,
        )
        throw new shared.Rollback('done')
      })
      .catch(shared.rolledBack)
    expect(await count(`topic = 'failed'`)).toBe(0)
  })

  test('a nested tx kept after its savepoint ended is refused while the outer transaction goes on', () =>
    shared.expectEscapedNestedTxRefused(prisma, outbox, { count, idIs: 'id = $1' }))

  test('a publish not awaited inside the callback either joins the transaction or is refused, never autocommits', async () => {
    let committed = 0
    for (let i = 0; i < 10; i++) {
      let pending: Promise<{ id: string }> | undefined
      await prisma.$transaction(async (tx) => {
        pending = publish(outbox, tx, { topic: 'unawaited', payload: i })
      })
      const result = await pending!.then(
        (r) => r,
        (e: unknown) => e,
      )
      if (isOutboxError(result)) {
        expect(result.code).toBe('NOT_IN_TRANSACTION')
      } else {
        // It reached the transaction before COMMIT, so it committed with it.
        expect(await count('id = $1', [(result as { id: string }).id])).toBe(1)
        committed++
      }
    }
    // Every refused one wrote nothing.
    expect(await count(`topic = 'unawaited'`)).toBe(committed)
  })

  test('a batch $transaction([...]) cannot carry publish: it takes only Prisma promises', async () => {
    const before = await widgets()
    // publish needs an interactive transaction; in a batch it could only be given the root client.
    const message = publish(outbox, prisma as never, { topic: 'batch', payload: 1 })
    const refused = shared.expectNotInTransaction(message, /a PrismaClient/)
    const batch = rejection(
      (async () => prisma.$transaction([prisma.widget.create({ data: { name: 'w-batch' } }), message]))(),
    )
    await refused
    expect((await batch).message).toMatch(/All elements of the array need to be Prisma Client promises/)
    expect(await widgets()).toBe(before)
    expect(await count(`topic = 'batch'`)).toBe(0)
  })
})

describe('errors while writing', () => {
  test('statement_timeout while waiting on a lock becomes TIMEOUT, and the transaction rolls back', async () => {
    const locker = new pg.Client({ connectionString: testDatabaseUrl() })
    await locker.connect()
    try {
      await locker.query('BEGIN')
      await locker.query(
        `INSERT INTO ${T} (id, topic, payload, dedup_key) VALUES (gen_random_uuid(), 'lock', '1', 'locked-1')`,
      )
      const err = await rejection(
        prisma.$transaction(async (tx) => {
          await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = '200ms'`)
          await publish(outbox, tx, { topic: 'timeout', payload: 1, dedupKey: 'locked-1' })
        }),
      )
      expect(isOutboxError(err, 'TIMEOUT'), String(err)).toBe(true)
      expect(err.message).toContain('[outboxkit] [prisma]')
    } finally {
      await locker.query('ROLLBACK')
      await locker.end()
    }
    expect(await count(`topic = 'timeout' OR dedup_key = 'locked-1'`)).toBe(0)
  })

  test('a missing table is a DATABASE error with the SQLSTATE message', () =>
    shared.expectMissingTableError(prisma, defineOutbox({ table: `${schema}.no_such_table` })))
})

describe('the outbox model and SQL for Prisma Migrate', () => {
  test('the shipped schema/outbox.prisma and schema/outbox.sql are what the helpers return', () => {
    const table = defineOutbox({})
    expect(readFileSync(shippedModelPath, 'utf8')).toBe(outboxPrismaModel(table))
    expect(readFileSync(shippedSqlPath, 'utf8')).toBe(outboxMigrationSql(table))
    expect(outboxMigrationSql(table)).toContain(outboxDdl(table))
  })

  test("the Prisma example's schema carries the shipped model unchanged", () => {
    const example = readFileSync(
      new URL('../../../examples/prisma/prisma/schema.prisma', import.meta.url),
      'utf8',
    )
    expect(example).toContain(readFileSync(shippedModelPath, 'utf8'))
  })

  test('the model follows the table: @@map, @@schema and the index names of the DDL', () => {
    const long = defineOutbox({ table: `app.${'e'.repeat(60)}` })
    const model = outboxPrismaModel(long, { model: 'Event' })
    expect(model).toMatch(/^model Event \{$/m)
    expect(model).toContain(`@@map("${'e'.repeat(60)}")`)
    expect(model).toContain('@@schema("app")')
    for (const [, name] of outboxDdl(long).matchAll(/INDEX IF NOT EXISTS "([^"]+)"/g)) {
      expect(model).toContain(`map: "${name}"`)
    }
    expect(() => outboxPrismaModel(long, { model: '1bad name' })).toThrow(/INVALID_CONFIG|model must be/)
    expect(outboxPrismaModel(defineOutbox({}))).not.toContain('@@schema')
  })

  test('the table the SQL creates has the columns and types the model declares', async () => {
    const columns = await inspector.query<{ column_name: string; data_type: string; is_nullable: string }>(
      `SELECT column_name, data_type, is_nullable FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = 'outbox' ORDER BY ordinal_position`,
      [schema],
    )
    const model = readFileSync(shippedModelPath, 'utf8')
    const fields = [
      ...model.matchAll(/^ {2}(\w+) +(String|Json|Int|BigInt|DateTime)(\?)?(?: +(.*))?$/gm),
    ].map(([, field, type, optional, attrs]) => ({
      column: /@map\("([^"]+)"\)/.exec(attrs ?? '')?.[1] ?? field,
      type:
        type === 'Int'
          ? 'integer'
          : type === 'BigInt'
            ? 'bigint'
            : type === 'Json'
              ? 'jsonb'
              : type === 'DateTime'
                ? 'timestamp with time zone'
                : attrs?.includes('@db.Uuid')
                  ? 'uuid'
                  : 'text',
      nullable: optional ? 'YES' : 'NO',
    }))
    expect(
      columns.map((c) => ({ column: c.column_name, type: c.data_type, nullable: c.is_nullable })),
    ).toEqual(fields)
  })

  test('Prisma Client reads a published message through the shipped model', async () => {
    const row = await shared.readPublishedThroughModel(prisma, outbox, {
      payload: { n: 1 },
      headers: { a: 'b' },
    })
    expect(row.availableAt).toBeInstanceOf(Date)
    expect(row.createdAt).toBeInstanceOf(Date)
    expect((await prisma.outboxMessage.findUnique({ where: { dedupKey: 'model-1' } })).id).toBe(row.id)
  })
})
