import {
  expectOutboxError,
  removeSqliteFile,
  settle,
  tempSqliteFile,
  uniqueTableName,
} from '@outboxkit/conformance'
import { defineOutbox, isOutboxError, migrate } from '@outboxkit/core'
import { publish, publishMany } from '@outboxkit/kysely'
import { sqliteBackend } from '@outboxkit/sqlite'
import Database from 'better-sqlite3'
import { CamelCasePlugin, Kysely, SqliteDialect, type Transaction } from 'kysely'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { expectPluginsIgnored, expectRacingCommitRefused } from './support/refusals.js'

const file = tempSqliteFile('kysely_sqlite_refusals')
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

beforeAll(async () => {
  await migrate(outbox, sqliteBackend(database))
})
afterAll(async () => {
  await db.destroy()
  removeSqliteFile(file)
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

  test('a ControlledTransaction whose commit() runs while publish is on its way', () =>
    expectRacingCommitRefused(db, outbox, {
      expectRefused: (err) => expectOutboxError(err, 'NOT_IN_TRANSACTION'),
      count,
    }))
})

describe('what is accepted', () => {
  test('plugins on the transaction do not change what publish reads or writes', () =>
    expectPluginsIgnored(db.withPlugin(new CamelCasePlugin()), outbox, {
      dedupKey: 'p-1',
      payloadOf: (id) =>
        JSON.parse(
          (database.prepare(`SELECT payload FROM "${table}" WHERE id = ?`).get(id) as { payload: string })
            .payload,
        ),
    }))

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
