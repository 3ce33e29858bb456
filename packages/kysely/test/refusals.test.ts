import {
  expectOutboxError,
  expectPublishRefused,
  recordingPgClient,
  serverInspector,
  testDatabaseUrl,
  useOutboxTable,
} from '@outboxkit/conformance'
import { isOutboxError } from '@outboxkit/core'
import { publish, publishMany } from '@outboxkit/kysely'
import { pgBackend } from '@outboxkit/pg'
import {
  CamelCasePlugin,
  type ControlledTransaction,
  Kysely,
  PostgresDialect,
  sql,
  type Transaction,
} from 'kysely'
import pg from 'pg'
import { afterAll, describe, expect, test } from 'vitest'
import { expectPluginsIgnored, expectRacingCommitRefused, REFUSAL_PREFIX } from './support/refusals.js'

// Every statement node-postgres is asked to send, so a test can assert publish sent nothing.
const sent: string[] = []

const inspector = serverInspector()
const pool = new pg.Pool({
  connectionString: testDatabaseUrl(),
  max: 10,
  Client: recordingPgClient(sent),
})
const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) })
const outbox = useOutboxTable('kysely_refusals', { backend: () => pgBackend({ pool }) })
const table = outbox.table.name

const count = async (where = 'true', params: unknown[] = []) =>
  Number((await inspector.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, params))[0]!.n)

/** Asserts publish and publishMany on `handle` fail with NOT_IN_TRANSACTION, send no outbox statement and write nothing. */
async function expectRefused(handle: unknown, mentions: RegExp): Promise<void> {
  const before = await count()
  sent.length = 0
  await expectPublishRefused({ publish, publishMany }, outbox, handle, {
    message: [REFUSAL_PREFIX, mentions, 'Nothing was written.'],
  })
  expect(sent.filter((s) => s.includes(table))).toEqual([])
  expect(await count()).toBe(before)
}

afterAll(async () => {
  await inspector.close()
  await db.destroy()
})

describe('handles that never were a transaction', () => {
  test('the root Kysely instance, also with plugins or a schema', async () => {
    await expectRefused(db, /a Kysely instance that is not a transaction \(the root db/)
    await expectRefused(db.withPlugin(new CamelCasePlugin()), /not a transaction/)
    await expectRefused(db.withSchema('public'), /not a transaction/)
    // And at compile time: Kysely types isTransaction as `true` only on a Transaction.
    const compileTimeCheck = () =>
      // @ts-expect-error the root db is not a transaction
      publish(outbox, db, { topic: 'refused', payload: 1 })
    expect(typeof compileTimeCheck).toBe('function')
  })

  test('a db.connection() handle, even after a manual BEGIN on it', async () => {
    await db.connection().execute(async (conn) => {
      await expectRefused(conn, /db\.connection\(\) handle/)
      await sql`begin`.execute(conn)
      await expectRefused(conn, /not a transaction/)
      await sql`commit`.execute(conn)
    })
  })

  test('things that are not Kysely at all', async () => {
    await expectRefused(pool, /a BoundPool instance, which is not a Kysely instance/)
    await expectRefused(null, /got null/)
    await expectRefused({ query: () => {} }, /a plain object, which is not a Kysely instance/)
  })
})

describe('transactions that already ended', () => {
  test('a callback Transaction kept after its transaction committed: Kysely stops it before any SQL', async () => {
    let escaped: Transaction<any> | undefined
    await db.transaction().execute(async (trx) => {
      escaped = trx
      await publish(outbox, trx, { topic: 'inside', payload: 1 })
    })
    expect(await count(`topic = 'inside'`)).toBe(1)
    await expectRefused(escaped, /already committed/)
    await expectRefused(escaped!.withoutPlugins(), /already committed/)
  })

  test('a callback Transaction kept after its transaction rolled back', async () => {
    let escaped: Transaction<any> | undefined
    await db
      .transaction()
      .execute(async (trx) => {
        escaped = trx
        await publish(outbox, trx, { topic: 'rolled-back', payload: 1 })
        throw new Error('roll back')
      })
      .catch(() => {})
    await expectRefused(escaped, /already rolled back/)
    expect(await count(`topic = 'rolled-back'`)).toBe(0)
  })

  test('a ControlledTransaction after commit(), after rollback(), and its savepoint handle', async () => {
    const committed = await db.startTransaction().execute()
    const sp = await committed.savepoint('sp').execute()
    await publish(outbox, sp, { topic: 'controlled', payload: 1 })
    await sp.releaseSavepoint('sp').execute()
    await committed.commit().execute()
    expect(await count(`topic = 'controlled'`)).toBe(1)
    await expectRefused(committed, /a ControlledTransaction that was already committed/)
    await expectRefused(sp, /a ControlledTransaction that was already committed/)

    const rolledBack = await db.startTransaction().execute()
    await rolledBack.rollback().execute()
    await expectRefused(rolledBack, /a ControlledTransaction that was already rolled back/)
  })

  test('a ControlledTransaction whose commit() runs while publish is on its way', () =>
    expectRacingCommitRefused(db, outbox, {
      expectRefused: (err) => expectOutboxError(err, 'NOT_IN_TRANSACTION'),
      count: (topic) => count('topic = $1', [topic]),
    }))

  test('a ControlledTransaction whose commit failed is rolled back', async () => {
    const trx = await db.startTransaction().execute()
    await sql`select 1/0`.execute(trx).catch(() => {})
    await expect(trx.commit().execute()).rejects.toThrow()
    expect(trx.isRolledBack).toBe(true)
    await expectRefused(trx, /already rolled back/)
  })
})

describe('a transaction that failed', () => {
  test('is refused with NOT_IN_TRANSACTION and writes nothing (callback and controlled)', async () => {
    await db
      .transaction()
      .execute(async (trx) => {
        await sql`select 1/0`.execute(trx).catch(() => {})
        const err = await publish(outbox, trx, { topic: 'failed', payload: 1 }).catch((e: unknown) => e)
        expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), String(err)).toBe(true)
        expect((err as Error).message).toMatch(/a transaction that failed .* Roll it back/)
      })
      .catch(() => {})
    const ctl: ControlledTransaction<any> = await db.startTransaction().execute()
    await sql`select 1/0`.execute(ctl).catch(() => {})
    const err = await publishMany(outbox, ctl, [{ topic: 'failed', payload: 1 }]).catch((e: unknown) => e)
    expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), String(err)).toBe(true)
    await ctl.rollback().execute()
    expect(await count(`topic = 'failed'`)).toBe(0)
  })
})

describe('what is accepted', () => {
  test('plugins on the transaction do not change what publish reads or writes', () =>
    expectPluginsIgnored(db.withPlugin(new CamelCasePlugin()).withSchema('public'), outbox, {
      dedupKey: 'plugins-1',
      payloadOf: async (id) => {
        const [row] = await inspector.query(`SELECT payload::text AS p FROM ${table} WHERE id = $1`, [id])
        return JSON.parse(row!.p as string)
      },
    }))

  test('publish costs one statement on the transaction connection', async () => {
    await db.transaction().execute(async (trx) => {
      sent.length = 0
      await publishMany(outbox, trx, [
        { topic: 'round-trip', payload: 1 },
        { topic: 'round-trip', payload: 2 },
      ])
      expect(sent).toHaveLength(1)
      expect(sent[0]).toContain(table)
    })
    expect(await count(`topic = 'round-trip'`)).toBe(2)
  })

  test('a savepoint handle rolled back removes its message; the outer commit keeps the rest', async () => {
    const trx = await db.startTransaction().execute()
    const outer = await publish(outbox, trx, { topic: 'savepoint', payload: 'outer' })
    const sp1 = await trx.savepoint('sp1').execute()
    const inner = await publish(outbox, sp1, { topic: 'savepoint', payload: 'inner' })
    const after = await sp1.rollbackToSavepoint('sp1').execute()
    const kept = await publish(outbox, after, { topic: 'savepoint', payload: 'kept' })
    await trx.commit().execute()
    const ids = (await inspector.query(`SELECT id::text AS id FROM ${table} WHERE topic = 'savepoint'`)).map(
      (r) => r.id,
    )
    expect(ids.sort()).toEqual([outer.id, kept.id].sort())
    expect(ids).not.toContain(inner.id)
  })
})

describe('errors from the database', () => {
  test('statement_timeout surfaces as OutboxError TIMEOUT, and the transaction rolls back', async () => {
    // A concurrent, uncommitted publish with the same dedupKey makes ours wait on its row lock.
    const holder = await db.startTransaction().execute()
    await publish(outbox, holder, { topic: 'timeout', payload: 'holder', dedupKey: 'timeout-1' })
    try {
      const err = await db
        .transaction()
        .execute(async (trx) => {
          await sql`SET LOCAL statement_timeout = '200ms'`.execute(trx)
          await publish(outbox, trx, { topic: 'timeout', payload: 'waiter', dedupKey: 'timeout-1' })
        })
        .catch((e: unknown) => e)
      expect(isOutboxError(err, 'TIMEOUT'), String(err)).toBe(true)
      expect((err as Error).message).toMatch(/^\[outboxkit\] \[kysely\] publish to .* timed out/)
    } finally {
      await holder.rollback().execute()
    }
    expect(await count(`topic = 'timeout'`)).toBe(0)
  })
})
