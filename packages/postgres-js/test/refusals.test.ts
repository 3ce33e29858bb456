import { serverInspector, testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import { defineOutbox, isOutboxError, migrate } from '@outboxkit/core'
import { POSTGRES_TRANSACTION_MARKER } from '@outboxkit/core/adapter'
import { type PostgresJsTransaction, postgresJsBackend, publish, publishMany } from '@outboxkit/postgres-js'
import postgres from 'postgres'
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest'

const outbox = defineOutbox({ table: uniqueTableName('pjs_refusals') })
const inspector = serverInspector()
/** Every statement postgres.js sends on `sql`, from its `debug` hook. */
const sent: string[] = []
let sql: postgres.Sql

const count = async () =>
  Number((await inspector.query(`SELECT count(*)::int AS n FROM ${outbox.table.name}`))[0]!.n)

async function expectRefused(promise: Promise<unknown>, reason: RegExp) {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), String(err)).toBe(true)
  const message = (err as Error).message
  expect(message).toMatch(/^\[outboxkit\] \[postgres-js\] publish needs an open postgres\.js transaction/)
  expect(message).toMatch(reason)
  expect(message).toContain('Nothing was written.')
}

beforeAll(async () => {
  sql = postgres(testDatabaseUrl(), {
    max: 4,
    onnotice: () => {},
    debug: (_c, query) => void sent.push(query),
  })
  await migrate(outbox, postgresJsBackend(sql))
})
beforeEach(() => {
  sent.length = 0
})
afterAll(async () => {
  await inspector.query(`DROP TABLE IF EXISTS ${outbox.table.name}`)
  await inspector.close()
  await sql.end()
})

test('the root sql and reserved connections are refused before any SQL is sent', async () => {
  await expectRefused(publish(outbox, sql as never, { topic: 't', payload: 1 }), /root sql/)
  const reserved = await sql.reserve()
  try {
    await expectRefused(
      publishMany(outbox, reserved as never, [{ topic: 't', payload: 1 }]),
      /sql\.reserve\(\)/,
    )
    await reserved`BEGIN`
    sent.length = 0
    await expectRefused(publish(outbox, reserved as never, { topic: 't', payload: 1 }), /sql\.reserve\(\)/)
    expect(sent).toEqual([])
  } finally {
    await reserved`ROLLBACK`
    reserved.release()
  }
  expect(await count()).toBe(0)
})

test('other handles are refused and named', async () => {
  const kyselyLike = { transaction: () => {}, selectFrom: () => {} }
  await expectRefused(
    publish(outbox, kyselyLike as never, { topic: 't', payload: 1 }),
    /own outboxkit adapter/,
  )
  await expectRefused(publish(outbox, undefined as never, { topic: 't', payload: 1 }), /got undefined/)
  await expectRefused(
    publish(outbox, (() => {}) as never, { topic: 't', payload: 1 }),
    /not a postgres\.js transaction/,
  )
  expect(sent).toEqual([])
})

test('in an open transaction publish sends two pipelined statements: the marker, then the guarded INSERT', async () => {
  await sql.begin(async (tx) => {
    sent.length = 0
    await publish(outbox, tx, { topic: 't', payload: 1 })
    expect(sent).toHaveLength(2)
    expect(sent[0]).toBe(POSTGRES_TRANSACTION_MARKER)
    expect(sent[1]).toMatch(/INSERT INTO/)
    expect(sent[1]).toMatch(/current_setting\('outboxkit\.in_tx', true\)/)
    sent.length = 0
    await publishMany(outbox, tx, [
      { topic: 't', payload: 2 },
      { topic: 't', payload: 3 },
    ])
    expect(sent).toHaveLength(2)
    await tx.savepoint(async (sp) => {
      sent.length = 0
      await publish(outbox, sp, { topic: 't', payload: 4 })
      expect(sent).toHaveLength(2)
    })
  })
  expect(await count()).toBe(4)
  await inspector.query(`DELETE FROM ${outbox.table.name}`)
})

test('a transaction committed or rolled back by hand inside the callback is refused, and nothing is written', async () => {
  for (const end of ['COMMIT', 'ROLLBACK']) {
    for (const fn of [
      publish,
      (o: typeof outbox, tx: PostgresJsTransaction, m: { topic: string; payload: unknown }) =>
        publishMany(o, tx, [m]),
    ]) {
      const outcome = sql.begin(async (tx) => {
        await tx.unsafe(end)
        await fn(outbox, tx, { topic: 't', payload: end })
      })
      await expectRefused(outcome, /already committed or rolled back/)
    }
  }
  expect(await count()).toBe(0)
})

test('a tx kept after its transaction ended is refused while its connection serves other queries', async () => {
  let escaped: PostgresJsTransaction | undefined
  await sql.begin(async (tx) => {
    escaped = tx
  })
  // The connection went back to the pool; load the pool so it is also busy with other work.
  const busy = Array.from({ length: 8 }, () => sql`SELECT pg_sleep(0.01)`)
  await expectRefused(publish(outbox, escaped!, { topic: 't', payload: 'escaped' }), /already committed/)
  await Promise.all(busy)
  expect(await count()).toBe(0)
})

test('a failed transaction is refused and writes nothing', async () => {
  await expect(
    sql.begin(async (tx) => {
      await tx`SELECT 1/0`.catch(() => {})
      await expectRefused(publish(outbox, tx, { topic: 't', payload: 1 }), /failed/)
    }),
  ).rejects.toMatchObject({ code: '22012' })
  expect(await count()).toBe(0)
})
