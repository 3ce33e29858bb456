import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { uniqueTableName } from '@outboxkit/conformance'
import { defineOutbox, isOutboxError, migrate } from '@outboxkit/core'
import { publish, publishMany } from '@outboxkit/kysely'
import { sqliteBackend } from '@outboxkit/sqlite'
import Database from 'better-sqlite3'
import { CamelCasePlugin, Kysely, SqliteDialect, type Transaction } from 'kysely'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'

const file = join(tmpdir(), `${uniqueTableName('kysely_sqlite_refusals')}.db`)
const database = new Database(file)
database.pragma('journal_mode = WAL')
// Every statement the dialect prepares, so a test can assert what publish sent.
const prepared: string[] = []
const prepare = database.prepare.bind(database)
database.prepare = ((source: string) => {
  prepared.push(source)
  return prepare(source)
}) as typeof database.prepare
const db = new Kysely<any>({ dialect: new SqliteDialect({ database }) })
const table = uniqueTableName('kysely_sqlite_refusals')
const outbox = defineOutbox({ table })

const count = (topic: string) =>
  (database.prepare(`SELECT count(*) AS n FROM "${table}" WHERE topic = ?`).get(topic) as { n: number }).n

const settle = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (err: unknown) => err as Error,
  )

beforeAll(async () => {
  await migrate(outbox, sqliteBackend(database))
})
afterAll(async () => {
  await db.destroy()
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
})

describe("Kysely's own state, as on PostgreSQL", () => {
  test('escaped transactions are stopped by Kysely before any SQL is prepared', async () => {
    let escaped: Transaction<any> | undefined
    await db.transaction().execute(async (trx) => {
      escaped = trx
    })
    prepared.length = 0
    for (const attempt of [
      () => publish(outbox, escaped!, { topic: 'escaped', payload: 1 }),
      () => publishMany(outbox, escaped!.withoutPlugins(), [{ topic: 'escaped', payload: 1 }]),
    ]) {
      const err = await settle(attempt())
      expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), String(err)).toBe(true)
      expect(err!.message).toMatch(/already committed/)
    }
    expect(prepared.filter((s) => s.includes(table))).toEqual([])
  })

  test('a ControlledTransaction whose commit() runs while publish is on its way', async () => {
    const trx = await db.startTransaction().execute()
    const pending = settle(publish(outbox, trx, { topic: 'racing-commit', payload: 1 }))
    await trx.commit().execute()
    const err = await pending
    expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), String(err)).toBe(true)
    expect(count('racing-commit')).toBe(0)
  })
})

describe('what is accepted', () => {
  test('plugins on the transaction do not change what publish reads or writes', async () => {
    const camel = db.withPlugin(new CamelCasePlugin())
    const first = await camel
      .transaction()
      .execute((trx) =>
        publish(outbox, trx, { topic: 'plugins', payload: { someField: 1 }, dedupKey: 'p-1' }),
      )
    // Without withoutPlugins(), CamelCasePlugin would rename dedup_key and the existing id would be lost.
    const second = await camel
      .transaction()
      .execute((trx) => publishMany(outbox, trx, [{ topic: 'plugins', payload: 2, dedupKey: 'p-1' }]))
    expect(first.published).toBe(true)
    expect(second).toEqual([{ id: first.id, published: false }])
    const row = database.prepare(`SELECT payload FROM "${table}" WHERE id = ?`).get(first.id) as {
      payload: string
    }
    expect(JSON.parse(row.payload)).toEqual({ someField: 1 })
  })

  test('one statement per publish, whatever the number of messages', async () => {
    await db.transaction().execute(async (trx) => {
      prepared.length = 0
      await publishMany(outbox, trx, [
        { topic: 'one-statement', payload: 1 },
        { topic: 'one-statement', payload: 2, dedupKey: 'fresh' },
      ])
      expect(prepared.filter((s) => s.includes(table))).toHaveLength(1)
    })
    expect(count('one-statement')).toBe(2)
  })
})
