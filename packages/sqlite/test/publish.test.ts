import { uniqueTableName } from '@outboxkit/conformance'
import {
  defineOutbox,
  isOutboxError,
  migrate,
  type PublishResult,
  type StandardSchemaV1,
} from '@outboxkit/core'
import { publish, publishMany, sqliteBackend } from '@outboxkit/sqlite'
import type Database from 'better-sqlite3'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { type TempDatabase, tableRows, tempDatabase } from './support.js'

let temp: TempDatabase
let db: Database.Database
/** A second connection to the same file: what other processes see (committed rows only). */
let other: Database.Database
const statements: string[] = []
const table = uniqueTableName('sqlite_publish')
const outbox = defineOutbox({ table, orderedTopics: ['ledger'] })
const count = (where = '1 = 1', params: unknown[] = []) =>
  Number(
    other
      .prepare(`SELECT count(*) AS n FROM "${table}" WHERE ${where}`)
      .pluck()
      .get(...params),
  )

beforeAll(async () => {
  temp = tempDatabase('publish')
  db = temp.open({ verbose: (sql) => statements.push(String(sql)) })
  other = temp.open()
  db.exec('CREATE TABLE orders (id TEXT PRIMARY KEY)')
  await migrate(outbox, sqliteBackend(db))
})
beforeEach(() => {
  db.exec(`DELETE FROM "${table}"; DELETE FROM orders`)
  statements.length = 0
})
afterAll(() => temp.cleanup())

/** The rejection of `promise`, or a failure when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e as Error,
  )
  expect(error, 'expected a rejection').toBeDefined()
  return error!
}

describe('refusals on the real better-sqlite3', () => {
  test('a Database in autocommit is refused with a rejected promise, and nothing is written', async () => {
    // A rejection, not a synchronous throw: there is no transaction to roll back.
    let pending: Promise<PublishResult> | undefined
    expect(() => {
      pending = publish(outbox, db, { topic: 't', payload: 1 })
    }).not.toThrow()
    const err = await rejection(pending!)
    expect(isOutboxError(err, 'NOT_IN_TRANSACTION')).toBe(true)
    expect(err.message).toMatch(
      /^\[outboxkit\] \[sqlite\] publish needs a better-sqlite3 Database inside a transaction/,
    )
    expect(err.message).toContain('autocommit')
    const many = await rejection(publishMany(outbox, db, [{ topic: 't', payload: 1 }]))
    expect(isOutboxError(many, 'NOT_IN_TRANSACTION')).toBe(true)
    expect(count()).toBe(0)
    expect(statements.some((s) => s.includes('INSERT'))).toBe(false)
  })

  test('a closed Database is refused', async () => {
    const closed = temp.open()
    closed.close()
    const err = await rejection(publish(outbox, closed, { topic: 't', payload: 1 }))
    expect(isOutboxError(err, 'NOT_IN_TRANSACTION')).toBe(true)
    expect(err.message).toContain('a closed Database')
  })

  test('things that are not a better-sqlite3 Database are refused, even inside a transaction', async () => {
    const handles: [string, unknown][] = [
      ['undefined', undefined],
      ['null', null],
      ['a string', 'db'],
      ['a plain object', { inTransaction: true, prepare() {} }],
      ['a prepared statement', db.prepare('SELECT 1')],
      ['a transaction function', db.transaction(() => {})],
      ['the backend', sqliteBackend(db)],
    ]
    db.exec('BEGIN')
    try {
      for (const [label, handle] of handles) {
        const err = await rejection(
          publish(outbox, handle as Database.Database, { topic: 't', payload: label }),
        )
        expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), label).toBe(true)
        expect(err.message, label).toContain('[outboxkit] [sqlite]')
      }
    } finally {
      db.exec('ROLLBACK')
    }
    expect(count()).toBe(0)
  })

  test('a Database whose transaction committed or rolled back (by hand too) is refused', async () => {
    for (const end of ['COMMIT', 'ROLLBACK']) {
      db.exec('BEGIN')
      db.exec(end)
      const err = await rejection(publish(outbox, db, { topic: 'escaped', payload: end }))
      expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), end).toBe(true)
    }
    db.transaction(() => {})()
    expect(isOutboxError(await rejection(publish(outbox, db, { topic: 'escaped', payload: 1 })))).toBe(true)
    expect(count()).toBe(0)
  })
})

describe('the synchronous write', () => {
  test('inside db.transaction() the row is written when publish returns, without await', async () => {
    let seenInside = -1
    let result: Promise<PublishResult> | undefined
    db.transaction(() => {
      db.prepare('INSERT INTO orders (id) VALUES (?)').run('o-1')
      result = publish(outbox, db, { topic: 'order.created', payload: { orderId: 'o-1' }, key: 'o-1' })
      // Same connection, same transaction, no await: the INSERT has already run.
      seenInside = Number(db.prepare(`SELECT count(*) FROM "${table}"`).pluck().get())
    })()
    expect(seenInside).toBe(1)
    const { id, published } = await result!
    expect(published).toBe(true)
    const [row] = other.prepare(`SELECT * FROM "${table}" WHERE id = ?`).all(id) as Record<string, unknown>[]
    expect(row).toMatchObject({ topic: 'order.created', key: 'o-1', state: 'pending', attempts: 0 })
    expect(JSON.parse(row!.payload as string)).toEqual({ orderId: 'o-1' })
    expect(JSON.parse(row!.headers as string)).toEqual({})
    expect(row!.available_at).toBe(row!.created_at)
    expect(Math.abs(Number(row!.created_at) - Date.now())).toBeLessThan(60_000)
  })

  test('after BEGIN (a transaction kept across awaits) publish writes into it', async () => {
    db.exec('BEGIN')
    const { id } = await publish(outbox, db, { topic: 't', payload: 1 })
    expect(count('id = ?', [id])).toBe(0) // not committed: another connection does not see it
    db.exec('COMMIT')
    expect(count('id = ?', [id])).toBe(1)
  })

  test('a rolled-back transaction leaves nothing', async () => {
    let result: Promise<PublishResult> | undefined
    expect(() =>
      db.transaction(() => {
        db.prepare('INSERT INTO orders (id) VALUES (?)').run('o-2')
        result = publish(outbox, db, { topic: 'order.created', payload: 1 })
        throw new Error('roll back')
      })(),
    ).toThrow('roll back')
    const { id } = await result!
    expect(count('id = ?', [id])).toBe(0)
    expect(count()).toBe(0)
    expect(Number(other.prepare('SELECT count(*) FROM orders').pluck().get())).toBe(0)
  })

  test('an invalid message is thrown synchronously, so db.transaction() rolls back the business row', () => {
    expect(() =>
      db.transaction(() => {
        db.prepare('INSERT INTO orders (id) VALUES (?)').run('o-3')
        void publish(outbox, db, { topic: 't', payload: { n: 1n } })
      })(),
    ).toThrow(expect.objectContaining({ code: 'INVALID_MESSAGE' }))
    expect(Number(other.prepare('SELECT count(*) FROM orders').pluck().get())).toBe(0)
    expect(count()).toBe(0)
  })

  test('returning the promise from db.transaction() is refused by better-sqlite3 and rolls back (documented)', () => {
    expect(() =>
      db.transaction((() => publish(outbox, db, { topic: 't', payload: 1 })) as unknown as () => undefined)(),
    ).toThrow(/cannot return a promise/)
    expect(count()).toBe(0)
  })

  test('a topic whose schema validates asynchronously is refused with INVALID_CONFIG; sync schemas validate', () => {
    const asyncSchema: StandardSchemaV1<{ n: number }> = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: async (value) => ({ value: value as { n: number } }),
      },
    }
    const syncSchema: StandardSchemaV1<{ n: number }> = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: (value) =>
          typeof (value as { n?: unknown }).n === 'number'
            ? { value: value as { n: number } }
            : { issues: [{ message: 'n must be a number', path: ['n'] }] },
      },
    }
    const typed = defineOutbox({ table, topics: { slow: asyncSchema, fast: syncSchema } })
    expect(() =>
      db.transaction(() => {
        void publish(typed, db, { topic: 'slow', payload: { n: 1 } })
      })(),
    ).toThrow(
      expect.objectContaining({
        code: 'INVALID_CONFIG',
        message: expect.stringMatching(/synchronous schema/),
      }),
    )
    expect(() =>
      db.transaction(() => {
        void publish(typed, db, { topic: 'fast', payload: { n: 'x' } as never })
      })(),
    ).toThrow(
      expect.objectContaining({
        code: 'INVALID_MESSAGE',
        message: expect.stringMatching(/n must be a number/),
      }),
    )
    db.transaction(() => {
      void publish(typed, db, { topic: 'fast', payload: { n: 2 } })
    })()
    expect(count()).toBe(1)
  })
})

describe('dedup and publishMany', () => {
  test('a second publish with the same dedupKey is a no-op returning the first id', async () => {
    const results: Promise<PublishResult>[] = []
    db.transaction(() => {
      results.push(publish(outbox, db, { topic: 'd', payload: 1, dedupKey: 'dd-1' }))
    })()
    db.transaction(() => {
      results.push(publish(outbox, db, { topic: 'd', payload: 2, dedupKey: 'dd-1' }))
    })()
    const [first, second] = await Promise.all(results)
    expect(first!.published).toBe(true)
    expect(second).toEqual({ id: first!.id, published: false })
    let batch: Promise<PublishResult[]> | undefined
    db.transaction(() => {
      batch = publishMany(outbox, db, [
        { topic: 'd', payload: 3, dedupKey: 'dd-2' },
        { topic: 'd', payload: 4, dedupKey: 'dd-1' },
        { topic: 'd', payload: 5, dedupKey: 'dd-2' },
        { topic: 'd', payload: 6 },
      ])
    })()
    const b = await batch!
    expect(b.map((r) => r.published)).toEqual([true, false, false, true])
    expect(b[1]!.id).toBe(first!.id)
    expect(b[2]!.id).toBe(b[0]!.id)
    expect(count(`topic = 'd'`)).toBe(3) // dd-1, dd-2 and the one without a dedupKey
  })

  test('publishMany writes every message with one INSERT, in order (plus one SELECT only on dedup conflicts)', async () => {
    const msgs = Array.from({ length: 250 }, (_, i) => ({ topic: 'many', payload: { i }, key: `k${i}` }))
    let pending: Promise<PublishResult[]> | undefined
    statements.length = 0
    db.transaction(() => {
      pending = publishMany(outbox, db, msgs)
    })()
    const results = await pending!
    const inserts = statements.filter((s) => /^INSERT INTO/.test(s.trim()))
    expect(inserts).toHaveLength(1)
    expect(statements.filter((s) => /^SELECT/.test(s.trim()))).toHaveLength(0)
    expect(results).toHaveLength(250)
    expect(results.every((r) => r.published)).toBe(true)
    const rows = tableRows(other, table)
    expect(rows.map((r) => r.id)).toEqual(results.map((r) => r.id)) // UUIDv7: id order is message order
    expect(rows.map((r) => JSON.parse(r.payload as string).i)).toEqual(msgs.map((m) => m.payload.i))

    statements.length = 0
    db.transaction(() => {
      pending = publishMany(outbox, db, [
        { topic: 'many', payload: 'a', dedupKey: 'x' },
        { topic: 'many', payload: 'b', dedupKey: 'x' },
      ])
    })()
    expect((await pending!).map((r) => r.published)).toEqual([true, false])
    expect(statements.filter((s) => /^INSERT INTO/.test(s.trim()))).toHaveLength(1)
    expect(statements.filter((s) => /^SELECT id, dedup_key/.test(s.trim()))).toHaveLength(1)
  })

  test('publishMany is all or nothing: one invalid message writes none', () => {
    expect(() =>
      db.transaction(() => {
        void publishMany(outbox, db, [
          { topic: 'atomic', payload: 1 },
          { topic: 'atomic', payload: { bad: Number.NaN } },
        ])
      })(),
    ).toThrow(
      expect.objectContaining({ code: 'INVALID_MESSAGE', message: expect.stringContaining('message #1') }),
    )
    expect(count()).toBe(0)
  })

  test('delayMs: available_at is delayMs after created_at, on SQLite clock', async () => {
    let p: Promise<PublishResult> | undefined
    db.transaction(() => {
      p = publish(outbox, db, { topic: 'late', payload: 1, delayMs: 60_000.4 })
    })()
    const { id } = await p!
    const row = other
      .prepare(`SELECT available_at - created_at AS d FROM "${table}" WHERE id = ?`)
      .get(id) as {
      d: number
    }
    expect(row.d).toBe(60_001)
  })
})

describe('ordered topics', () => {
  test('messages of a key are numbered in write order, within a batch and across transactions', async () => {
    db.transaction(() => {
      void publishMany(outbox, db, [
        { topic: 'ledger', key: 'a', payload: 1 },
        { topic: 'ledger', key: 'b', payload: 1 },
        { topic: 'unordered', key: 'a', payload: 'x' },
        { topic: 'ledger', key: 'a', payload: 2 },
      ])
      void publish(outbox, db, { topic: 'ledger', key: 'a', payload: 3 })
    })()
    db.transaction(() => {
      void publish(outbox, db, { topic: 'ledger', key: 'a', payload: 4 })
      void publish(outbox, db, { topic: 'ledger', key: 'b', payload: 2 })
    })()
    const rows = tableRows(other, table)
    const seqs = (key: string) =>
      rows
        .filter((r) => r.key === key && r.topic === 'ledger')
        .sort((x, y) => Number(x.seq) - Number(y.seq))
        .map((r) => JSON.parse(r.payload as string))
    expect(seqs('a')).toEqual([1, 2, 3, 4])
    expect(seqs('b')).toEqual([1, 2])
    expect(rows.find((r) => r.topic === 'unordered')!.seq).toBeNull()
    const aSeqs = rows.filter((r) => r.key === 'a' && r.topic === 'ledger').map((r) => Number(r.seq))
    expect(new Set(aSeqs).size).toBe(4)
  })

  test('a message of an ordered topic without a key is refused', () => {
    expect(() =>
      db.transaction(() => {
        void publish(outbox, db, { topic: 'ledger', payload: 1 })
      })(),
    ).toThrow(expect.objectContaining({ code: 'INVALID_MESSAGE' }))
  })
})
