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

test('pgliteBackend takes no options: a second argument is refused, naming the option', () => {
  const refusal = (fn: () => unknown) => {
    try {
      fn()
    } catch (err) {
      return err as { code?: string; message: string }
    }
    throw new Error('expected pgliteBackend to throw')
  }
  const unknown = refusal(() =>
    (pgliteBackend as (...args: unknown[]) => unknown)(db, { commandTimeoutMs: 5_000 }),
  )
  expect(unknown.code).toBe('INVALID_CONFIG')
  expect(unknown.message).toMatch(
    /^\[outboxkit\] \[pglite\] unknown option "commandTimeoutMs" for pgliteBackend\(db\)/,
  )
  expect(unknown.message).toContain('takes no options')
  const notAnObject = refusal(() => (pgliteBackend as (...args: unknown[]) => unknown)(db, 5_000))
  expect(notAnObject.code).toBe('INVALID_CONFIG')
  expect(notAnObject.message).toContain('second argument')
  expect(typeof pgliteBackend(db).claim).toBe('function')
})
