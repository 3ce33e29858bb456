import { PGlite } from '@electric-sql/pglite'
import { defineOutbox, migrate } from '@outboxkit/core'
import { pgliteBackend, publish } from '@outboxkit/pglite'
import { afterAll, beforeAll, expect, test } from 'vitest'

let db: PGlite
const outbox = defineOutbox({ table: 'refusals_outbox' })
const count = async () =>
  (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM refusals_outbox')).rows[0]!.n

beforeAll(async () => {
  db = await PGlite.create()
  await migrate(outbox, pgliteBackend(db))
})
afterAll(() => db.close())

test('refuses a transaction committed or rolled back by hand inside the callback, writing nothing', async () => {
  for (const end of ['COMMIT', 'ROLLBACK']) {
    await db.transaction(async (tx) => {
      await tx.exec(end)
      expect(tx.closed).toBe(false) // PGlite's flag does not see it: the probe must.
      await expect(publish(outbox, tx, { topic: 't', payload: end })).rejects.toMatchObject({
        code: 'NOT_IN_TRANSACTION',
      })
    })
  }
  expect(await count()).toBe(0)
})

test('a failed transaction is reported as a database error and writes nothing', async () => {
  await expect(
    db.transaction(async (tx) => {
      await tx.query('SELECT 1/0').catch(() => {})
      await publish(outbox, tx, { topic: 't', payload: 1 })
    }),
  ).rejects.toMatchObject({ code: 'DATABASE' })
  expect(await count()).toBe(0)
})
