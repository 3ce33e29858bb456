// Scenario 9 (publish side): every bad handle, message and table name gets a stable OutboxError
// code and writes nothing, which is checked through SQL. Hostile strings that are valid data are
// stored verbatim (bound as parameters, never spliced).
import { PGlite } from '@electric-sql/pglite'
import { testDatabaseUrl } from '@outboxkit/conformance'
import { defineOutbox, migrate, type Outbox, OutboxError, type PublishMessage } from '@outboxkit/core'
import { quoteIdent } from '@outboxkit/core/adapter'
import { pgBackend, publish, publishMany } from '@outboxkit/pg'
import { pgliteBackend, publish as pglitePublish } from '@outboxkit/pglite'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { z } from 'zod'
import { recordOutcome } from './support/outcome-table.js'
import { tableSql, World } from './support/world.js'

const w = new World()
let sentinel: string
beforeAll(async () => {
  sentinel = w.table('sentinel')
  await w.query(`CREATE TABLE ${quoteIdent(sentinel)} (x int)`)
})
afterAll(() => w.close())

const count = async (outbox: Outbox<any>) =>
  (await w.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${tableSql(outbox)}`))[0]!.n
const sentinelExists = async () =>
  (await w.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [sentinel]))[0]!.t !== null

/** Runs `fn`, expects an OutboxError with `code`, returns it. */
async function refused(code: string, fn: () => unknown): Promise<OutboxError> {
  let error: unknown
  try {
    await fn()
  } catch (e) {
    error = e
  }
  expect(error, 'expected an OutboxError').toBeInstanceOf(OutboxError)
  expect((error as OutboxError).code).toBe(code)
  expect((error as OutboxError).message).toMatch(/^\[outboxkit\] \[[a-z-]+\] /)
  return error as OutboxError
}

/** Runs `fn(client)` in a transaction that COMMITs afterwards whatever `fn` did. */
async function inCommittedTransaction(fn: (client: pg.PoolClient) => Promise<unknown>): Promise<void> {
  const client = await w.pool.connect()
  try {
    await client.query('BEGIN')
    await fn(client)
    await client.query('COMMIT')
  } finally {
    await client.query('ROLLBACK').catch(() => {})
    client.release()
  }
}

const ok = { topic: 't', payload: { ok: true } }

describe('pg handles that are not an open transaction', () => {
  let outbox: Outbox
  const extra: pg.Client[] = []
  beforeAll(async () => {
    outbox = await w.outbox('bad_pg_handles')
  })
  afterAll(async () => {
    for (const c of extra) await c.end().catch(() => {})
  })

  const cases: [string, () => Promise<unknown>][] = [
    ['a pg.Pool', async () => w.pool],
    [
      'a pooled client in autocommit (no BEGIN)',
      async () => {
        const c = await w.pool.connect()
        c.release()
        return c
      },
    ],
    [
      'a client whose transaction committed',
      async () => {
        const c = await w.pool.connect()
        await c.query('BEGIN')
        await c.query('COMMIT')
        c.release()
        return c
      },
    ],
    [
      'a client whose transaction rolled back',
      async () => {
        const c = await w.pool.connect()
        await c.query('BEGIN')
        await c.query('ROLLBACK')
        c.release()
        return c
      },
    ],
    [
      'a client in a failed transaction (after an error)',
      async () => {
        const c = new pg.Client({ connectionString: testDatabaseUrl() })
        extra.push(c)
        await c.connect()
        await c.query('BEGIN')
        await c.query('SELECT 1 / 0').catch(() => {})
        return c
      },
    ],
    ['a pg.Client never connected', async () => new pg.Client({ connectionString: testDatabaseUrl() })],
    [
      'a pg.Client after end()',
      async () => {
        const c = new pg.Client({ connectionString: testDatabaseUrl() })
        await c.connect()
        await c.end()
        return c
      },
    ],
    ['null', async () => null],
    ['undefined', async () => undefined],
    ['a string', async () => 'BEGIN'],
    ['a look-alike { query() }', async () => ({ query: async () => ({ rows: [] }) })],
  ]
  test.each(cases)('publish refuses %s', async (label, make) => {
    const handle = await make()
    await refused('NOT_IN_TRANSACTION', () => publish(outbox, handle as never, ok))
    await refused('NOT_IN_TRANSACTION', () => publishMany(outbox, handle as never, [ok, ok]))
    expect(await count(outbox)).toBe(0)
    recordOutcome('pg handle', label, '`NOT_IN_TRANSACTION`, 0 rows')
  })

  test('publish refuses a client whose COMMIT is queued before the publish is sent', async () => {
    const c = await w.pool.connect()
    try {
      await c.query('BEGIN')
      const commit = c.query('COMMIT') // not awaited: pg queues it ahead of the publish
      await refused('NOT_IN_TRANSACTION', () => publish(outbox, c, ok))
      await commit
    } finally {
      c.release()
    }
    expect(await count(outbox)).toBe(0)
    recordOutcome(
      'pg handle',
      'a client whose COMMIT was sent (not awaited) before publish',
      '`NOT_IN_TRANSACTION`, 0 rows',
    )
  })
})

describe('PGlite handles that are not an open transaction', () => {
  let db: PGlite
  const outbox = defineOutbox({ table: 'bad_pglite_handles' })
  const rows = async () =>
    (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM bad_pglite_handles')).rows[0]!.n
  beforeAll(async () => {
    db = await PGlite.create()
    await migrate(outbox, pgliteBackend(db))
  })
  afterAll(() => db.close())

  test('the PGlite instance itself', async () => {
    await refused('NOT_IN_TRANSACTION', () => pglitePublish(outbox, db as never, ok))
    expect(await rows()).toBe(0)
    recordOutcome('PGlite handle', 'the PGlite instance', '`NOT_IN_TRANSACTION`, 0 rows')
  })

  test('a transaction used after db.transaction() committed', async () => {
    let leaked: unknown
    await db.transaction(async (tx) => {
      leaked = tx
    })
    await refused('NOT_IN_TRANSACTION', () => pglitePublish(outbox, leaked as never, ok))
    expect(await rows()).toBe(0)
    recordOutcome(
      'PGlite handle',
      'a tx used after its db.transaction() committed',
      '`NOT_IN_TRANSACTION`, 0 rows',
    )
  })

  test('a transaction used after tx.rollback()', async () => {
    let leaked: unknown
    await db.transaction(async (tx) => {
      leaked = tx
      await tx.rollback()
    })
    await refused('NOT_IN_TRANSACTION', () => pglitePublish(outbox, leaked as never, ok))
    expect(await rows()).toBe(0)
    recordOutcome('PGlite handle', 'a tx used after tx.rollback()', '`NOT_IN_TRANSACTION`, 0 rows')
  })

  test.each(['COMMIT', 'ROLLBACK'])(
    'a transaction ended by a hand-written %s inside the callback',
    async (end) => {
      await db.transaction(async (tx) => {
        await tx.exec(end)
        await refused('NOT_IN_TRANSACTION', () => pglitePublish(outbox, tx, ok))
      })
      expect(await rows()).toBe(0)
      recordOutcome(
        'PGlite handle',
        `a tx ended by a hand-written ${end} inside the callback`,
        '`NOT_IN_TRANSACTION`, 0 rows',
      )
    },
  )
})

describe('bad messages on an open pg transaction (the transaction then commits)', () => {
  let plain: Outbox
  let typed: Outbox<{ 'order.created': z.ZodType<{ orderId: string }> }>
  let small: Outbox
  beforeAll(async () => {
    plain = await w.outbox('bad_msg')
    typed = await w.outbox('bad_msg_typed', {
      topics: { 'order.created': z.object({ orderId: z.string() }) },
    })
    small = await w.outbox('bad_msg_small', { maxPayloadBytes: 1_024 })
  })

  const cyclic: Record<string, unknown> = { a: 1 }
  cyclic.self = cyclic
  const invalid: [string, () => [Outbox<any>, unknown]][] = [
    [
      'unknown topic (outbox with topics)',
      () => [typed, { topic: 'order.deleted', payload: { orderId: '1' } }],
    ],
    ['payload failing the topic schema', () => [typed, { topic: 'order.created', payload: { orderId: 42 } }]],
    ['payload BigInt', () => [plain, { topic: 't', payload: { n: 10n } }]],
    ['payload with a cycle', () => [plain, { topic: 't', payload: cyclic }]],
    ['payload function', () => [plain, { topic: 't', payload: { f: () => 1 } }]],
    ['payload NaN', () => [plain, { topic: 't', payload: { n: Number.NaN } }]],
    ['payload Infinity', () => [plain, { topic: 't', payload: Number.POSITIVE_INFINITY }]],
    ['payload Map', () => [plain, { topic: 't', payload: new Map([['a', 1]]) }]],
    ['payload Set', () => [plain, { topic: 't', payload: { s: new Set([1]) } }]],
    ['payload Symbol', () => [plain, { topic: 't', payload: { s: Symbol('x') } }]],
    ['payload undefined (missing)', () => [plain, { topic: 't' }]],
    ['payload [undefined]', () => [plain, { topic: 't', payload: [undefined] }]],
    ['payload string with NUL', () => [plain, { topic: 't', payload: 'a\u0000b' }]],
    [
      'payload over maxPayloadBytes (2 KiB > 1 KiB)',
      () => [small, { topic: 't', payload: 'x'.repeat(2_048) }],
    ],
    [
      'headers over maxPayloadBytes (2 KiB > 1 KiB)',
      () => [small, { topic: 't', payload: 1, headers: { big: 'x'.repeat(2_048) } }],
    ],
    ['empty topic', () => [plain, { topic: '', payload: 1 }]],
    ['topic of 256 characters', () => [plain, { topic: 'a'.repeat(256), payload: 1 }]],
    ['topic not a string (42)', () => [plain, { topic: 42, payload: 1 }]],
    ['topic with NUL', () => [plain, { topic: 'a\u0000', payload: 1 }]],
    ['key an object', () => [plain, { topic: 't', payload: 1, key: { id: 1 } }]],
    ['key NaN', () => [plain, { topic: 't', payload: 1, key: Number.NaN }]],
    ['key of 1 025 characters', () => [plain, { topic: 't', payload: 1, key: 'k'.repeat(1_025) }]],
    ['header value with NUL', () => [plain, { topic: 't', payload: 1, headers: { a: 'x\u0000' } }]],
    ['header name with NUL', () => [plain, { topic: 't', payload: 1, headers: { 'a\u0000': 'x' } }]],
    ['header value not a string (1)', () => [plain, { topic: 't', payload: 1, headers: { a: 1 } }]],
    ['headers an array', () => [plain, { topic: 't', payload: 1, headers: ['a'] }]],
    ['headers a Map', () => [plain, { topic: 't', payload: 1, headers: new Map() }]],
    ['dedupKey empty', () => [plain, { topic: 't', payload: 1, dedupKey: '' }]],
    ['delayMs -1', () => [plain, { topic: 't', payload: 1, delayMs: -1 }]],
    ['delayMs NaN', () => [plain, { topic: 't', payload: 1, delayMs: Number.NaN }]],
    ['delayMs Infinity', () => [plain, { topic: 't', payload: 1, delayMs: Number.POSITIVE_INFINITY }]],
    ["delayMs '5' (a string)", () => [plain, { topic: 't', payload: 1, delayMs: '5' }]],
    ['message null', () => [plain, null]],
    ['message an array', () => [plain, [ok]]],
  ]
  test.each(invalid)('publish refuses: %s', async (label, make) => {
    const [outbox, message] = make()
    await inCommittedTransaction(async (client) => {
      const err = await refused('INVALID_MESSAGE', () => publish(outbox, client, message as never))
      expect(err.source).toBe('pg')
      expect(client.getTransactionStatus()).toBe('T') // refused before sending: the transaction is intact
    })
    expect(await count(outbox)).toBe(0)
    recordOutcome('message', label, '`INVALID_MESSAGE`, 0 rows, transaction still usable')
  })

  test('publishMany with one bad message among good ones writes none of them', async () => {
    await inCommittedTransaction(async (client) => {
      await refused('INVALID_MESSAGE', () =>
        publishMany(plain, client, [ok, { topic: 't', payload: { n: 1n } } as never, ok]),
      )
    })
    expect(await count(plain)).toBe(0)
    recordOutcome(
      'message',
      'publishMany: one bad message among good ones',
      '`INVALID_MESSAGE` naming message #1, 0 rows',
    )
  })

  test('publishMany with something that is not an array', async () => {
    await inCommittedTransaction(async (client) => {
      await refused('INVALID_MESSAGE', () => publishMany(plain, client, ok as never))
    })
    expect(await count(plain)).toBe(0)
    recordOutcome('message', 'publishMany: not an array', '`INVALID_MESSAGE`, 0 rows')
  })

  test('hostile strings that are valid data are stored verbatim, never spliced into SQL', async () => {
    const outbox = await w.outbox('bad_hostile')
    const hostile = `x'); DROP TABLE ${sentinel}; --`
    const quotes = `'"\\;--$1$$ \u2028 𝄞`
    const hugeHeader = 'h'.repeat(1_048_576)
    const messages: PublishMessage<typeof outbox>[] = [
      { topic: hostile, payload: { v: hostile }, key: hostile, dedupKey: hostile },
      { topic: 't', payload: 1, headers: { [quotes]: quotes } },
      { topic: 't', payload: 2, headers: { big: hugeHeader } },
    ]
    await inCommittedTransaction((client) => publishMany(outbox, client, messages))
    const rows = await w.query<{
      topic: string
      key: string
      dedup_key: string
      payload: unknown
      headers: Record<string, string>
    }>(`SELECT topic, key, dedup_key, payload, headers FROM ${tableSql(outbox)} ORDER BY id`)
    expect(rows[0]).toMatchObject({
      topic: hostile,
      key: hostile,
      dedup_key: hostile,
      payload: { v: hostile },
    })
    expect(rows[1]!.headers).toEqual({ [quotes]: quotes })
    expect(rows[2]!.headers.big).toHaveLength(1_048_576)
    expect(await sentinelExists()).toBe(true)
    recordOutcome(
      'data',
      'SQL injection text as topic, key, dedupKey and payload',
      'accepted, stored verbatim (bound parameters), other tables untouched',
    )
    recordOutcome(
      'data',
      'header name and value with quotes, backslash, `$1`, `$$`, U+2028, astral characters',
      'accepted, stored verbatim',
    )
    recordOutcome(
      'data',
      'a 1 MiB header value',
      'accepted: within `maxPayloadBytes`, which bounds the headers too',
    )
  })
})

describe('hostile table names', () => {
  const names: [string, unknown][] = [
    ['`outbox; DROP TABLE <sentinel>`', 'outbox; DROP TABLE __sentinel__'],
    ['`outbox" ; DROP TABLE <sentinel>; --`', 'outbox" ; DROP TABLE __sentinel__; --'],
    ["`x'--`", "x'--"],
    ['`a.b.c`', 'a.b.c'],
    ['`.outbox`', '.outbox'],
    ['`public.`', 'public.'],
    ['empty string', ''],
    ['`1outbox` (leading digit)', '1outbox'],
    ['`tåble` (non-ASCII)', 'tåble'],
    ['64 characters', 'a'.repeat(64)],
    ['`out box` (space)', 'out box'],
    ['42', 42],
  ]
  test.each(names)('defineOutbox refuses the table name %s', async (label, name) => {
    const table = typeof name === 'string' ? name.replace('__sentinel__', sentinel) : name
    await refused('INVALID_CONFIG', () => defineOutbox({ table: table as string }))
    expect(await sentinelExists()).toBe(true)
    recordOutcome('table name', label, '`INVALID_CONFIG` at `defineOutbox`, nothing run')
  })

  test('table: undefined means the default table; null is refused like other wrong types', async () => {
    expect(defineOutbox({ table: undefined }).table.display).toBe('outbox')
    await refused('INVALID_CONFIG', () => defineOutbox({ table: null as never }))
    recordOutcome('table name', '`undefined`', 'accepted as "not given": the default table `\'outbox\'`')
    recordOutcome('table name', '`null`', '`INVALID_CONFIG` at `defineOutbox`')
  })

  test('a valid schema-qualified name is quoted, not spliced', async () => {
    const schema = w.table('schema')
    await w.query(`CREATE SCHEMA ${quoteIdent(schema)}`)
    try {
      const outbox = defineOutbox({ table: `${schema}.Outbox_Mixed` })
      await migrate(outbox, pgBackend({ pool: w.pool }))
      await inCommittedTransaction((client) => publish(outbox, client, ok))
      const [row] = await w.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${quoteIdent(schema)}."Outbox_Mixed"`,
      )
      expect(row!.n).toBe(1)
    } finally {
      await w.query(`DROP SCHEMA ${quoteIdent(schema)} CASCADE`)
    }
  })
})
