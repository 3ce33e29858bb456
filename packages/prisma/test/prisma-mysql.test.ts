import { readFileSync } from 'node:fs'
import {
  type Deferred,
  deferred,
  type Inspector,
  mysqlInspector,
  rejection,
  testMysqlUri,
  uniqueTableName,
} from '@outboxkit/conformance'
import { defineOutbox, isOutboxError, migrate, type Outbox } from '@outboxkit/core'
import { mysqlOutboxDdl } from '@outboxkit/core/adapter'
import { mysqlBackend } from '@outboxkit/mysql'
import { outboxMigrationSql, outboxPrismaModel, publish, publishMany } from '@outboxkit/prisma'
import { PrismaMariaDb } from '@prisma/adapter-mariadb'
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
const { PrismaClient } = await loadPrismaClient('mysql')

// Everything of this file lives in a database of its own: the generated client's models map to
// the fixed tables `outbox` and `widget`.
const database = uniqueTableName('prisma_my')
const uriOf = (db: string) => {
  const url = new URL(testMysqlUri())
  url.pathname = `/${db}`
  return url.toString()
}
const admin = mysqlInspector()
let inspector: Inspector
let prisma: TestPrismaClient
const outbox: Outbox = defineOutbox({})

const count = async (where = 'TRUE', params: unknown[] = []) =>
  Number((await inspector.query(`SELECT COUNT(*) AS n FROM outbox WHERE ${where}`, params))[0]!.n)
const widgets = async (where = 'TRUE', params: unknown[] = []) =>
  Number((await inspector.query(`SELECT COUNT(*) AS n FROM widget WHERE ${where}`, params))[0]!.n)

beforeAll(async () => {
  await admin.query(`CREATE DATABASE \`${database}\``)
  inspector = mysqlInspector(uriOf(database))
  await inspector.query(readFileSync(shippedSqlPathFor('mysql'), 'utf8'))
  await inspector.query('CREATE TABLE widget (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(191) NOT NULL)')
  prisma = new PrismaClient({ adapter: new PrismaMariaDb(uriOf(database)) })
})

afterAll(async () => {
  await prisma?.$disconnect()
  await inspector?.close()
  await admin.query(`DROP DATABASE IF EXISTS \`${database}\``).catch(() => {})
  await admin.close()
})

describe('the dialect comes from the Prisma client', () => {
  test('root, transaction, $extends() transaction and nested transaction clients all say mysql', () =>
    shared.expectDialectEverywhere(prisma, 'mysql'))

  test('a provider outboxkit does not write to is refused with INVALID_CONFIG; nothing is written', async () => {
    const before = await count()
    for (const provider of ['sqlserver', 'mongodb', 'cockroachdb']) {
      const err = await rejection(
        publish(outbox, { _activeProvider: provider } as never, { topic: 'other', payload: 1 }),
      )
      expect(isOutboxError(err, 'INVALID_CONFIG'), String(err)).toBe(true)
      expect(err.message).toContain(`"${provider}" provider`)
    }
    expect(await count()).toBe(before)
  })
})

describe('publish on a MySQL / MariaDB transaction', () => {
  test('the message commits with the model writes, and rolls back with them', async () => {
    const { id } = await prisma.$transaction(async (tx) => {
      await tx.widget.create({ data: { name: 'w-commit' } })
      return publish(outbox, tx, { topic: 'accepted', payload: { w: 1 }, key: 'k1', headers: { h: 'v' } })
    })
    const [row] = await inspector.query(
      'SELECT topic, `key`, CAST(payload AS CHAR) AS p FROM outbox WHERE id = ?',
      [id],
    )
    expect(row).toMatchObject({ topic: 'accepted', key: 'k1' })
    expect(JSON.parse(row!.p as string)).toEqual({ w: 1 })
    await shared.expectRollbackWithModelWrites(prisma, outbox, { count, widgets })
  })

  test('a taken dedupKey on a pool opened with foundRows: false (no affected rows) is a no-op, not a refusal', async () => {
    const url = new URL(uriOf(database))
    const strict = new PrismaClient({
      adapter: new PrismaMariaDb({
        host: url.hostname,
        port: Number(url.port || 3306),
        user: decodeURIComponent(url.username),
        password: decodeURIComponent(url.password) || undefined,
        database,
        foundRows: false,
      }),
    })
    try {
      const first = await strict.$transaction((tx) =>
        publish(outbox, tx, { topic: 'found-rows', payload: 1, dedupKey: 'fr-1' }),
      )
      const again = await strict.$transaction((tx) =>
        publishMany(outbox, tx, [
          { topic: 'found-rows', payload: 2, dedupKey: 'fr-1' },
          { topic: 'found-rows', payload: 3, dedupKey: 'fr-1' },
        ]),
      )
      expect(first.published).toBe(true)
      expect(again).toEqual([
        { id: first.id, published: false },
        { id: first.id, published: false },
      ])
      expect(await count(`dedup_key = 'fr-1'`)).toBe(1)
    } finally {
      await strict.$disconnect()
    }
  })
  test('a server without @@in_transaction (MySQL) gets unguarded statements after one failed attempt that wrote nothing', async () => {
    // MySQL 8 answers the guard with error 1193 "Unknown system variable 'in_transaction'". A query
    // extension renames the variable so that MariaDB answers the same way.
    const sent: string[] = []
    const mysqlLike = new PrismaClient({ adapter: new PrismaMariaDb(uriOf(database)) }).$extends({
      query: {
        $allOperations({ operation, args, query }: shared.AllOperations) {
          if (operation === '$executeRawUnsafe' || operation === '$queryRawUnsafe') {
            const [sql, ...values] = args as [string, ...unknown[]]
            sent.push(sql)
            return query([sql.replaceAll('@@in_transaction', '@@in_transaction_mysql'), ...values])
          }
          return query(args)
        },
      },
    })
    try {
      const first = await mysqlLike.$transaction((tx: any) =>
        publish(outbox, tx, { topic: 'no-guard', payload: 1, dedupKey: 'ng-1' }),
      )
      expect(first.published).toBe(true)
      expect(sent.filter((s) => s.includes('@@in_transaction'))).toHaveLength(1)
      const inserts = sent.filter((s) => s.startsWith('INSERT'))
      expect(inserts).toHaveLength(2) // the guarded one that failed, then the plain one
      sent.length = 0
      const second = await mysqlLike.$transaction((tx: any) =>
        publishMany(outbox, tx, [
          { topic: 'no-guard', payload: 2 },
          { topic: 'no-guard', payload: 3, dedupKey: 'ng-1' },
        ]),
      )
      expect(second[1]).toEqual({ id: first.id, published: false })
      // Remembered for this client: no guard, no failed statement any more.
      expect(sent.some((s) => s.includes('@@in_transaction'))).toBe(false)
      expect(await count(`topic = 'no-guard'`)).toBe(2)
    } finally {
      await (mysqlLike as unknown as TestPrismaClient).$disconnect()
    }
  })
})

describe('ordered topics on MySQL / MariaDB', () => {
  test('messages of an ordered topic are numbered per key, in commit order, through the keys table', async () => {
    const ordered = defineOutbox({ table: uniqueTableName('prisma_seq'), orderedTopics: ['ledger'] })
    await shared.expectOrderedSeq(prisma, ordered, {
      backend: mysqlBackend({ uri: uriOf(database) }),
      seqOf: async (id) =>
        (await inspector.query(`SELECT seq FROM \`${ordered.table.name}\` WHERE id = ?`, [id]))[0]!.seq,
    })
  })
})

describe('what publish refuses on MySQL / MariaDB', () => {
  shared.testKeptHandleRefusals(() => prisma, outbox, count)

  test('a tx whose transaction the server ended on a deadlock: the guard writes nothing and publish refuses', async () => {
    await inspector.query(`INSERT INTO widget (id, name) VALUES (1001, 'a'), (1002, 'b')`)
    const aLocked = deferred()
    const bLocked = deferred()
    const outcomes: { victim: boolean; refusal?: Error; autocommitted?: number }[] = []
    const run = (mine: number, theirs: number, locked: Deferred<void>, other: typeof locked) =>
      prisma
        .$transaction(
          async (tx) => {
            await tx.$executeRawUnsafe('UPDATE widget SET name = ? WHERE id = ?', `x${mine}`, mine)
            locked.resolve()
            await other.promise
            try {
              await tx.$executeRawUnsafe('UPDATE widget SET name = ? WHERE id = ?', `y${mine}`, theirs)
            } catch (err) {
              expect((err as { code?: string }).code).toBe('P2010') // 1213 deadlock
              // MariaDB rolled the whole transaction back; Prisma still hands out this tx.
              const refusal = await shared.expectNotInTransaction(
                publish(outbox, tx, { topic: 'after-deadlock', payload: mine }),
                /database transaction already ended/,
              )
              // What the guard prevented: a plain statement on this tx now autocommits.
              const autocommitted = await tx.$executeRawUnsafe(
                'INSERT INTO widget (name) VALUES (?)',
                `autocommitted-${mine}`,
              )
              outcomes.push({ victim: true, refusal, autocommitted })
              throw new shared.Rollback('deadlock victim')
            }
            outcomes.push({ victim: false })
          },
          { maxWait: 10_000, timeout: 20_000 },
        )
        .catch(shared.rolledBack)
    await Promise.all([run(1001, 1002, aLocked, bLocked), run(1002, 1001, bLocked, aLocked)])
    expect(outcomes.filter((o) => o.victim)).toHaveLength(1)
    expect(await count(`topic = 'after-deadlock'`)).toBe(0)
    // The unguarded statement of the same tx survived the "rollback": the hazard was real.
    expect(await widgets(`name LIKE 'autocommitted-%'`)).toBe(1)
  })
})

describe('errors while writing on MySQL / MariaDB', () => {
  test('a lock wait timeout becomes TIMEOUT', async () => {
    const holding = deferred()
    const release = deferred()
    const locker = prisma
      .$transaction(
        async (tx) => {
          await publish(outbox, tx, { topic: 'lock', payload: 1, dedupKey: 'locked-1' })
          holding.resolve()
          await release.promise
          throw new shared.Rollback('release')
        },
        { timeout: 20_000 },
      )
      .catch(shared.rolledBack)
    await holding.promise
    try {
      const err = await rejection(
        prisma.$transaction(
          async (tx) => {
            await tx.$executeRawUnsafe('SET SESSION innodb_lock_wait_timeout = 1')
            try {
              await publish(outbox, tx, { topic: 'timeout', payload: 1, dedupKey: 'locked-1' })
            } finally {
              await tx.$executeRawUnsafe('SET SESSION innodb_lock_wait_timeout = DEFAULT')
            }
          },
          { timeout: 20_000 },
        ),
      )
      expect(isOutboxError(err, 'TIMEOUT'), String(err)).toBe(true)
      expect(err.message).toContain('[outboxkit] [prisma]')
    } finally {
      release.resolve()
      await locker
    }
    expect(await count(`topic = 'timeout' OR dedup_key = 'locked-1'`)).toBe(0)
  })

  test('a missing table is a DATABASE error naming it', () =>
    shared.expectMissingTableError(prisma, defineOutbox({ table: 'no_such_table' })))
})

describe('the MySQL outbox model and SQL for Prisma Migrate', () => {
  /** The column type MySQL / MariaDB reports for a model field (MariaDB's JSON is LONGTEXT). */
  function expectedType(type: string, native: string | undefined): string[] {
    if (native) return [native.toLowerCase()]
    switch (type) {
      case 'Int':
        return ['int', 'int(11)']
      case 'BigInt':
        return ['bigint', 'bigint(20)']
      case 'Json':
        return ['json', 'longtext']
      default:
        return [`?${type}`]
    }
  }

  async function expectTableMatches(model: ReturnType<typeof parseModels>[number]) {
    const columns = await inspector.query<{ name: string; type: string; nullable: string }>(
      `SELECT column_name AS name, column_type AS type, is_nullable AS nullable FROM information_schema.columns
       WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position`,
      [database, model.table],
    )
    expect(columns.map((c) => c.name)).toEqual(model.fields.map((f) => f.column))
    for (const f of model.fields) {
      const c = columns.find((x) => x.name === f.column)!
      expect(expectedType(f.type, f.native), `${model.table}.${f.column}`).toContain(c.type.toLowerCase())
      expect(c.nullable, `${model.table}.${f.column} nullable`).toBe(f.optional ? 'YES' : 'NO')
    }
    const stats = await inspector.query<{ name: string; col: string; non_unique: number }>(
      `SELECT index_name AS name, column_name AS col, non_unique FROM information_schema.statistics
       WHERE table_schema = ? AND table_name = ? ORDER BY index_name, seq_in_index`,
      [database, model.table],
    )
    const indexes = new Map<string, { unique: boolean; columns: string[] }>()
    for (const s of stats) {
      const entry = indexes.get(s.name) ?? { unique: Number(s.non_unique) === 0, columns: [] }
      entry.columns.push(s.col)
      indexes.set(s.name, entry)
    }
    expect(indexes.get('PRIMARY')?.columns).toEqual([model.id])
    indexes.delete('PRIMARY')
    expect(Object.fromEntries(indexes)).toEqual(
      Object.fromEntries(model.indexes.map((i) => [i.name, { unique: i.unique, columns: i.columns }])),
    )
  }

  test('the shipped schema/outbox.mysql.prisma and .sql are what the helpers return', () =>
    shared.expectShippedFiles('mysql', outbox, mysqlOutboxDdl(outbox)))

  test('the table the shipped SQL creates has the columns, types, nullability and indexes the model declares', async () => {
    const [model] = parseModels(readFileSync(shippedModelPathFor('mysql'), 'utf8'))
    expect(model!.table).toBe('outbox')
    await expectTableMatches(model!)
  })

  test('the same table as migrate() creates it through @outboxkit/mysql', async () => {
    const table = uniqueTableName('prisma_mig')
    const migrated = defineOutbox({ table })
    const backend = mysqlBackend({ uri: uriOf(database) })
    try {
      await migrate(migrated, backend)
    } finally {
      await backend.close()
    }
    const [model] = parseModels(outboxPrismaModel(migrated, { provider: 'mysql' }))
    expect(model!.table).toBe(table)
    await expectTableMatches(model!)
  })

  test('an outbox with ordered topics gets the companion keys model, matching its table', async () => {
    const table = uniqueTableName('prisma_ord')
    const ordered = defineOutbox({ table, orderedTopics: ['ledger'] })
    const models = parseModels(outboxPrismaModel(ordered, { provider: 'mysql', model: 'Ledger' }))
    expect(models.map((m) => m.name)).toEqual(['Ledger', 'LedgerKey'])
    expect(parseModels(outboxPrismaModel(defineOutbox({ table }), { provider: 'mysql' }))).toHaveLength(1)
    for (const statement of outboxMigrationSql(ordered, { provider: 'mysql' }).split(/;\n/)) {
      if (statement.replace(/--.*$/gm, '').trim()) await inspector.query(statement)
    }
    for (const model of models) await expectTableMatches(model)
  })

  test('Prisma Client reads a published message through the shipped model', async () => {
    const row = await shared.readPublishedThroughModel(prisma, outbox, {
      payload: { n: 1 },
      headers: { a: 'b' },
    })
    expect(row.availableAt).toBeInstanceOf(Date)
    // DATETIME(6) written by the server in UTC, read by Prisma as UTC: within a minute of now.
    expect(Math.abs(row.createdAt.getTime() - Date.now())).toBeLessThan(60_000)
    expect(row.dueAt).toEqual(row.availableAt)
  })

  test('a schema-qualified table or an unknown provider is INVALID_CONFIG', () => {
    const qualified = defineOutbox({ table: 'app.outbox' })
    expect(() => outboxPrismaModel(qualified, { provider: 'mysql' })).toThrow(/another database/)
    expect(() => outboxPrismaModel(outbox, { provider: 'mssql' as never })).toThrow(/provider must be/)
    expect(() => outboxMigrationSql(outbox, { provider: 'postgres' as never })).toThrow(/provider must be/)
  })
})
