import { defineOutbox, isOutboxError, migrate, type PublishResult } from '@outboxkit/core'
import { type DrizzleSqliteTransaction, publish, publishMany } from '@outboxkit/drizzle'
import { sqliteBackend } from '@outboxkit/sqlite'
import type Database from 'better-sqlite3'
import { sql, TransactionRollbackError } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { drizzle as sqliteProxyDrizzle } from 'drizzle-orm/sqlite-proxy'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { tempDrizzleSqlite } from './sqlite-support.js'

// Drizzle's better-sqlite3 transactions are synchronous: publish is called inside
// db.transaction((tx) => ...) without await, and its INSERT has run when it returns.
const s = tempDrizzleSqlite('drizzle_sync')
const logged: string[] = []
const db = drizzle({ client: s.client, logger: { logQuery: (q) => void logged.push(q) } })
/** Another connection to the file: what other processes see (committed rows only). */
let other: Database.Database
const outbox = defineOutbox({ table: 'outbox' })

const count = (where = '1 = 1', params: unknown[] = []) =>
  Number(
    other
      .prepare(`SELECT count(*) AS n FROM outbox WHERE ${where}`)
      .pluck()
      .get(...params),
  )
const orders = () => Number(other.prepare('SELECT count(*) FROM orders').pluck().get())
const PREFIX = /^\[outboxkit\] \[drizzle\] publish needs an open Drizzle transaction, got /

/** The rejection of `promise`, or a failure when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e as Error,
  )
  expect(error, 'expected a rejection').toBeDefined()
  return error!
}

/** Asserts publish and publishMany on `handle` reject with NOT_IN_TRANSACTION, send no INSERT and write nothing. */
async function expectRefused(handle: unknown, mentions: RegExp): Promise<void> {
  const before = count()
  logged.length = 0
  for (const attempt of [
    () => publish(outbox, handle as never, { topic: 'refused', payload: 1 }),
    () => publishMany(outbox, handle as never, [{ topic: 'refused', payload: 1 }]),
  ]) {
    let pending: Promise<unknown> | undefined
    // A refusal rejects the Promise; it never throws synchronously.
    expect(() => {
      pending = attempt()
    }).not.toThrow()
    const err = await rejection(pending!)
    expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), String(err)).toBe(true)
    expect(err.message).toMatch(PREFIX)
    expect(err.message).toMatch(mentions)
    expect(err.message).toContain('Nothing was written.')
  }
  expect(logged.filter((q) => q.includes('INSERT'))).toEqual([])
  expect(count()).toBe(before)
}

beforeAll(async () => {
  other = s.open()
  s.client.exec('CREATE TABLE orders (id TEXT PRIMARY KEY)')
  await migrate(outbox, sqliteBackend(s.client))
})
beforeEach(() => {
  s.client.exec('DELETE FROM outbox; DELETE FROM orders')
  logged.length = 0
})
afterAll(() => s.cleanup())

describe('publish inside Drizzle’s synchronous db.transaction((tx) => ...)', () => {
  test('the row is written when publish returns, without await; the Promise carries the result', async () => {
    let pending: Promise<PublishResult> | undefined
    let seenInside = -1
    db.transaction((tx) => {
      tx.run(sql`INSERT INTO orders (id) VALUES ('o-1')`)
      pending = publish(outbox, tx, { topic: 'order.created', payload: { orderId: 'o-1' }, key: 'o-1' })
      // Same connection, same transaction, no await: the INSERT has already run.
      seenInside = Number(tx.get<{ n: number }>(sql`SELECT count(*) AS n FROM outbox`)!.n)
      // Not visible outside before the commit.
      expect(count()).toBe(0)
    })
    expect(seenInside).toBe(1)
    const { id, published } = await pending!
    expect(published).toBe(true)
    expect(count('id = ? AND topic = ? AND key = ?', [id, 'order.created', 'o-1'])).toBe(1)
    expect(orders()).toBe(1)
    // Through Drizzle's query path: its logger saw the INSERT.
    expect(logged.filter((q) => q.includes('INSERT INTO "outbox"'))).toHaveLength(1)
  })

  test('a throw in the callback rolls back the message with the business row', async () => {
    let pending: Promise<PublishResult> | undefined
    expect(() =>
      db.transaction((tx) => {
        tx.run(sql`INSERT INTO orders (id) VALUES ('o-2')`)
        pending = publish(outbox, tx, { topic: 'order.created', payload: 2 })
        throw new Error('roll back')
      }),
    ).toThrow('roll back')
    // The INSERT ran (the Promise resolved with its id) and was rolled back with the transaction.
    const { id } = await pending!
    expect(count('id = ?', [id])).toBe(0)
    expect(count()).toBe(0)
    expect(orders()).toBe(0)
  })

  test('tx.rollback() leaves nothing', async () => {
    let pending: Promise<PublishResult[]> | undefined
    expect(() =>
      db.transaction((tx) => {
        pending = publishMany(outbox, tx, [
          { topic: 'rb', payload: 1 },
          { topic: 'rb', payload: 2 },
        ])
        tx.rollback()
      }),
    ).toThrow(TransactionRollbackError)
    expect(await pending!).toHaveLength(2)
    expect(count()).toBe(0)
  })

  test('an invalid message is thrown synchronously, so db.transaction rolls back the business row', () => {
    let err: unknown
    try {
      db.transaction((tx) => {
        tx.run(sql`INSERT INTO orders (id) VALUES ('o-3')`)
        void publish(outbox, tx, { topic: 'bad', payload: 10n as never })
      })
    } catch (e) {
      err = e
    }
    expect(isOutboxError(err, 'INVALID_MESSAGE'), String(err)).toBe(true)
    expect(orders()).toBe(0)
    expect(count()).toBe(0)
  })

  test('a failed INSERT (a missing table) is thrown synchronously as DATABASE and rolls back', () => {
    const missing = defineOutbox({ table: 'no_such_outbox' })
    let err: unknown
    try {
      db.transaction((tx) => {
        tx.run(sql`INSERT INTO orders (id) VALUES ('o-4')`)
        void publish(missing, tx, { topic: 't', payload: { secret: 'not-in-messages' } })
      })
    } catch (e) {
      err = e
    }
    expect(isOutboxError(err, 'DATABASE'), String(err)).toBe(true)
    expect((err as Error).message).toMatch(/^\[outboxkit\] \[drizzle\] publish to no_such_outbox failed: /)
    expect((err as Error).message).not.toContain('not-in-messages')
    expect(orders()).toBe(0)
  })

  test('publishMany and dedupKey in one synchronous transaction', async () => {
    let first: Promise<PublishResult[]> | undefined
    let again: Promise<PublishResult[]> | undefined
    db.transaction((tx) => {
      first = publishMany(outbox, tx, [
        { topic: 'd', payload: 1, dedupKey: 'k1' },
        { topic: 'd', payload: 2 },
      ])
      again = publishMany(outbox, tx, [
        { topic: 'd', payload: 3, dedupKey: 'k1' },
        { topic: 'd', payload: 4, dedupKey: 'k2' },
      ])
    })
    const [a, b] = [await first!, await again!]
    expect(a.map((r) => r.published)).toEqual([true, true])
    expect(b).toEqual([
      { id: a[0]!.id, published: false },
      { id: b[1]!.id, published: true },
    ])
    expect(count()).toBe(3)
  })

  test('ordered topics: messages of a key are numbered in publish order', async () => {
    const ordered = defineOutbox({ table: 'outbox', orderedTopics: ['ledger'] })
    const pending: Promise<unknown>[] = []
    db.transaction((tx) => {
      pending.push(publish(ordered, tx, { topic: 'ledger', payload: 1, key: 'a' }))
      pending.push(
        publishMany(ordered, tx, [
          { topic: 'ledger', payload: 2, key: 'a' },
          { topic: 'other', payload: 0, key: 'a' },
          { topic: 'ledger', payload: 3, key: 'a' },
        ]),
      )
    })
    await Promise.all(pending)
    const rows = other.prepare(`SELECT payload, seq FROM outbox WHERE key = 'a' ORDER BY seq, payload`).all()
    expect(rows).toEqual([
      { payload: '0', seq: null },
      { payload: '1', seq: 1 },
      { payload: '2', seq: 2 },
      { payload: '3', seq: 3 },
    ])
  })

  test('savepoints with Drizzle’s tx.transaction((sp) => ...): only the rolled-back level is gone', async () => {
    const pending: Promise<PublishResult>[] = []
    db.transaction((tx) => {
      pending.push(publish(outbox, tx, { topic: 'sp', payload: 'outer' }))
      try {
        tx.transaction((sp) => {
          pending.push(publish(outbox, sp, { topic: 'sp', payload: 'inner' }))
          throw new Error('roll back the savepoint')
        })
      } catch {}
      tx.transaction((sp) => {
        pending.push(publish(outbox, sp, { topic: 'sp', payload: 'kept' }))
        sp.transaction((deeper) => {
          pending.push(publish(outbox, deeper, { topic: 'sp', payload: 'deeper' }))
        })
      })
    })
    const [outer, inner, kept, deeper] = await Promise.all(pending)
    expect(count('id = ?', [outer!.id])).toBe(1)
    expect(count('id = ?', [inner!.id])).toBe(0)
    expect(count('id = ?', [kept!.id])).toBe(1)
    expect(count('id = ?', [deeper!.id])).toBe(1)
  })
})

describe('what is refused on better-sqlite3, writing nothing', () => {
  test('the root db, outside and inside a transaction, and the better-sqlite3 Database', async () => {
    await expectRefused(db, /the Drizzle database itself \(BetterSQLite3Database\)/)
    await expectRefused(s.client, /a Database instance, which is not a Drizzle transaction/)
    let inside: Promise<Error> | undefined
    db.transaction(() => {
      // Drizzle's brand check: the root db is not the transaction, even on the same connection.
      inside = rejection(publish(outbox, db as never, { topic: 'refused', payload: 1 }))
    })
    const err = await inside!
    expect(isOutboxError(err, 'NOT_IN_TRANSACTION')).toBe(true)
    expect(err.message).toMatch(/the Drizzle database itself/)
    expect(err.message).toContain('db.transaction((tx) => {')
    expect(count()).toBe(0)
  })

  test('a tx and a nested tx kept after the transaction committed', async () => {
    let escaped: DrizzleSqliteTransaction | undefined
    let nested: DrizzleSqliteTransaction | undefined
    db.transaction((tx) => {
      escaped = tx
      tx.transaction((sp) => {
        nested = sp
      })
    })
    await expectRefused(escaped, /already committed or rolled back/)
    await expectRefused(nested, /already committed or rolled back/)
  })

  test('a tx kept after a rollback by throw, and after tx.rollback()', async () => {
    let thrown: DrizzleSqliteTransaction | undefined
    let rolledBack: DrizzleSqliteTransaction | undefined
    expect(() =>
      db.transaction((tx) => {
        thrown = tx
        throw new Error('no')
      }),
    ).toThrow('no')
    expect(() =>
      db.transaction((tx) => {
        rolledBack = tx
        tx.rollback()
      }),
    ).toThrow(TransactionRollbackError)
    await expectRefused(thrown, /already committed or rolled back/)
    await expectRefused(rolledBack, /already committed or rolled back/)
  })

  test('a tx whose database was closed', async () => {
    const c = s.open()
    let kept: DrizzleSqliteTransaction | undefined
    drizzle({ client: c }).transaction((tx) => {
      kept = tx
    })
    c.close()
    await expectRefused(kept, /whose database is closed/)
  })

  test('a transaction of a SQLite driver without a readable transaction state (sqlite-proxy)', async () => {
    await sqliteProxyDrizzle(async () => ({ rows: [] })).transaction(async (tx) => {
      await expectRefused(
        tx,
        /a Drizzle SQLiteProxyTransaction \(not a PostgreSQL transaction, nor .*better-sqlite3\)/,
      )
    })
  })
})

describe('documented limits (docs/adapters/drizzle.md, "MySQL and SQLite")', () => {
  test('an async callback is refused by better-sqlite3 and rolls back: nothing is written', () => {
    expect(() =>
      db.transaction((async (tx: DrizzleSqliteTransaction) => {
        await publish(outbox, tx, { topic: 'async', payload: 1 })
      }) as never),
    ).toThrow(/Transaction function cannot return a promise/)
    expect(count()).toBe(0)
  })

  test('returning the publish Promise from the callback is refused the same way', () => {
    expect(() =>
      db.transaction((tx) => publish(outbox, tx, { topic: 'returned', payload: 1 }) as never),
    ).toThrow(/Transaction function cannot return a promise/)
    expect(count()).toBe(0)
  })

  test('a tx kept after its transaction and used inside a later one on the same connection joins that one', async () => {
    let escaped: DrizzleSqliteTransaction | undefined
    db.transaction((tx) => {
      escaped = tx
    })
    // One better-sqlite3 connection has one transaction: nothing tells whose it is.
    expect(() =>
      db.transaction(() => {
        void publish(outbox, escaped!, { topic: 'joined', payload: 1 })
        throw new Error('the later transaction rolls back')
      }),
    ).toThrow('rolls back')
    expect(count(`topic = 'joined'`)).toBe(0)
  })
})
