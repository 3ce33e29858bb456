import { DIALECTS, testDatabaseUrl } from '@outboxkit/conformance'
import {
  createRelay,
  defineOutbox,
  discard,
  isOutboxError,
  listBlockedKeys,
  listDead,
  migrate,
  outboxStats,
  purge,
  type RelayOptions,
  redrive,
} from '@outboxkit/core'
import { parseTableName } from '@outboxkit/core/adapter'
import { pgBackend } from '@outboxkit/pg'
import { describe, expect, test } from 'vitest'
import { z } from 'zod'
import { nextEvent, useHarness } from './support/harness.js'

function thrown(fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return error
  }
  return undefined
}

describe('table names', () => {
  test.each(['outbox', 'app.outbox', 'Outbox_2', '_x', 'a'.repeat(63), `s.${'b'.repeat(63)}`])(
    'valid: %s',
    (table) => {
      const outbox = defineOutbox({ table })
      const [schema, name] = table.includes('.') ? table.split('.') : [null, table]
      expect(outbox.table).toEqual({ schema, name, display: table })
    },
  )

  test.each([
    '',
    'a.b.c',
    'x;drop table y',
    '"q"',
    '1abc',
    'a'.repeat(64),
    `s.${'b'.repeat(64)}`,
    'é'.repeat(32),
    'app.',
    '.outbox',
    'out box',
    'out-box',
    'outbox\u0000',
  ])('invalid: %j', (table) => {
    const err = thrown(() => defineOutbox({ table }))
    expect(isOutboxError(err, 'INVALID_CONFIG')).toBe(true)
    expect(
      isOutboxError(
        thrown(() => parseTableName(table)),
        'INVALID_CONFIG',
      ),
    ).toBe(true)
  })

  test.each([42, null, undefined, {}, [], true, Symbol('t')])('not a string: %s', (table) => {
    expect(
      isOutboxError(
        thrown(() => parseTableName(table)),
        'INVALID_CONFIG',
      ),
    ).toBe(true)
  })

  test.each([42, {}, [], true])('defineOutbox refuses a non-string table: %j', (table) => {
    expect(
      isOutboxError(
        thrown(() => defineOutbox({ table: table as never })),
        'INVALID_CONFIG',
      ),
    ).toBe(true)
  })
})

// A schema-qualified, mixed-case table on every database of the matrix (DIALECTS). The "schema" is
// PostgreSQL's schema, a MySQL database, or an SQLite attached database (`main`, always there).
describe.each(DIALECTS)('%s', (dialect) => {
  const h = useHarness(dialect)

  test('a valid mixed-case, schema-qualified name is quoted, never folded: migrate, publish and deliver work', async () => {
    const schema = dialect === 'sqlite' ? 'main' : `core_s_${process.pid}`
    const outbox = defineOutbox({ table: `${schema}.Outbox_Mixed` })
    if (dialect === 'postgres') await h.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    if (dialect === 'mysql') await h.query(`CREATE DATABASE IF NOT EXISTS ${schema}`)
    try {
      await migrate(outbox, await h.sharedBackend())
      if (dialect === 'postgres') {
        const [r] = await h.query<{ reg: string | null }>(`SELECT to_regclass($1)::text AS reg`, [
          `${schema}."Outbox_Mixed"`,
        ])
        expect(r!.reg).toBe(`${schema}."Outbox_Mixed"`)
      } else if (dialect === 'mysql') {
        const tables = await h.query<{ name: string }>(
          `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ?`,
          [schema],
        )
        expect(tables.map((t) => t.name)).toEqual(['Outbox_Mixed'])
      } else {
        const tables = await h.query<{ name: string }>(
          `SELECT name FROM sqlite_master WHERE type = 'table' AND lower(name) = 'outbox_mixed'`,
        )
        expect(tables.map((t) => t.name)).toEqual(['Outbox_Mixed'])
      }
      const relay = h.relay(outbox, { handlers: { t: () => {} }, notify: false })
      const delivered = nextEvent(relay, 'delivered')
      const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
      await relay.start()
      expect((await delivered).message.id).toBe(p!.id)
      await h.cleanup()
    } finally {
      if (dialect === 'postgres') await h.query(`DROP SCHEMA ${schema} CASCADE`)
      if (dialect === 'mysql') await h.query(`DROP DATABASE IF EXISTS ${schema}`)
      if (dialect === 'sqlite') await h.query(`DROP TABLE IF EXISTS main."Outbox_Mixed"`)
    }
  })
})

describe('createRelay options', () => {
  const outbox = defineOutbox({ table: 'outbox' })
  const typed = defineOutbox({ table: 'outbox', topics: { known: z.object({}) } })
  const backend = pgBackend({ connectionString: testDatabaseUrl() })
  const base = { backend, handlers: { t: () => {} } }

  test.each<[string, Partial<RelayOptions<any>>]>([
    ['concurrency 0', { concurrency: 0 }],
    ['concurrency -1', { concurrency: -1 }],
    ['concurrency 1.5', { concurrency: 1.5 }],
    ['concurrency "3"', { concurrency: '3' as never }],
    ['batchSize 0', { batchSize: 0 }],
    ['maxAttempts 0', { maxAttempts: 0 }],
    ['leaseMs NaN', { leaseMs: Number.NaN }],
    ['leaseMs 0', { leaseMs: 0 }],
    ['leaseMs Infinity', { leaseMs: Number.POSITIVE_INFINITY }],
    ['pollIntervalMs -5', { pollIntervalMs: -5 }],
    ['graceMs NaN', { graceMs: Number.NaN }],
    ['retry.jitter 2', { retry: { jitter: 2 } }],
    ['empty handlers', { handlers: {} }],
    ['no handlers', { handlers: undefined as never }],
    ['a handler that is not a function', { handlers: { t: 'nope' as never } }],
    ['no backend', { backend: undefined as never }],
    ['a backend without claim', { backend: { settle: () => {} } as never }],
  ])('%s → INVALID_CONFIG', (_label, override) => {
    const err = thrown(() => createRelay(outbox, { ...base, ...override } as RelayOptions<any>))
    expect(isOutboxError(err, 'INVALID_CONFIG')).toBe(true)
    expect((err as Error).message).toMatch(/^\[outboxkit\] \[relay\] /)
  })

  test('a handler for a topic the outbox does not define → INVALID_CONFIG; a known topic is fine', () => {
    const err = thrown(() => createRelay(typed, { backend, handlers: { unknown: () => {} } as never }))
    expect(isOutboxError(err, 'INVALID_CONFIG')).toBe(true)
    expect((err as Error).message).toMatch(/known/)
    expect(createRelay(typed, { backend, handlers: { known: () => {} } }).running).toBe(false)
  })

  test('not an outbox, or no options → INVALID_CONFIG', () => {
    expect(
      isOutboxError(
        thrown(() => createRelay({} as never, base)),
        'INVALID_CONFIG',
      ),
    ).toBe(true)
    expect(
      isOutboxError(
        thrown(() => createRelay(outbox, undefined as never)),
        'INVALID_CONFIG',
      ),
    ).toBe(true)
  })

  test('stop with a negative graceMs rejects with INVALID_CONFIG', async () => {
    const relay = createRelay(outbox, base)
    const err = await relay.stop({ graceMs: -1 }).catch((e: unknown) => e)
    expect(isOutboxError(err, 'INVALID_CONFIG')).toBe(true)
  })
})

describe('defineOutbox options are checked, not guessed', () => {
  const refusal = (options: unknown) => {
    const err = thrown(() => defineOutbox(options as never))
    expect(isOutboxError(err, 'INVALID_CONFIG'), String(err)).toBe(true)
    expect((err as Error).message).toMatch(/^\[outboxkit\] \[core\] /)
    return (err as Error).message
  }

  test('an option no outbox has → INVALID_CONFIG listing the valid ones', () => {
    expect(refusal({ channel: 'x' })).toBe(
      '[outboxkit] [core] unknown option "channel" for defineOutbox. Valid options: maxPayloadBytes, notify, orderedTopics, table, topics, transport.',
    )
  })

  test('transport is "table" (default) or "wal"; anything else → INVALID_CONFIG', () => {
    expect(defineOutbox({}).transport).toBe('table')
    expect(defineOutbox({ transport: 'wal' }).transport).toBe('wal')
    expect(refusal({ transport: 'kafka' })).toBe(
      `[outboxkit] [core] transport must be 'table' or 'wal', got the string "kafka".`,
    )
  })

  test.each([
    ['tabel', 'table'],
    ['Topics', 'topics'],
    ['orderedTopic', 'orderedTopics'],
    ['maxPayload', 'maxPayloadBytes'],
    ['notfy', 'notify'],
  ])('a typo %s → INVALID_CONFIG suggesting %s', (name, closest) => {
    expect(refusal({ [name]: 1 })).toContain(
      `unknown option "${name}" for defineOutbox (did you mean "${closest}"?)`,
    )
  })

  test('an orderedTopics entry with an unknown field → INVALID_CONFIG naming it', () => {
    expect(refusal({ orderedTopics: [{ topic: 'a', ondeadletter: 'continue' }] })).toContain(
      'unknown option "ondeadletter" for an orderedTopics entry (did you mean "onDeadLetter"?). Valid options: onDeadLetter, topic.',
    )
    expect(refusal({ orderedTopics: [new Map([['topic', 'a']])] })).toContain('has an invalid entry')
    const ok = defineOutbox({ orderedTopics: ['a', { topic: 'b', onDeadLetter: 'continue' }] })
    expect([...ok.orderedTopics]).toEqual(['a', 'b'])
  })

  test('topics must be a plain object; notify a boolean; maxPayloadBytes an integer >= 1', () => {
    expect(refusal({ topics: new Map([['t', z.object({})]]) })).toContain('topics must be a plain object')
    expect(refusal({ topics: [z.object({})] })).toContain('topics must be a plain object')
    expect(refusal({ notify: 'false' })).toContain('notify must be true or false, got the string "false"')
    expect(refusal({ maxPayloadBytes: 0 })).toContain('maxPayloadBytes must be an integer >= 1')
    expect(refusal({ maxPayloadBytes: 1.5 })).toContain('maxPayloadBytes must be an integer >= 1')
    expect(defineOutbox({ notify: false, maxPayloadBytes: 1024 }).notify).toBe(false)
  })
})

describe('admin options are checked: a typo never widens what a command deletes or moves', () => {
  const outbox = defineOutbox({ table: 'outbox' })
  const backend = pgBackend({ connectionString: testDatabaseUrl() })
  const refusal = async (run: () => Promise<unknown>) => {
    const err = await run().then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(isOutboxError(err, 'INVALID_CONFIG'), String(err)).toBe(true)
    return (err as Error).message
  }

  test.each<[string, () => Promise<unknown>, string]>([
    [
      'purge olderThan',
      () => purge(outbox, backend, { olderThan: 60_000 } as never),
      '"olderThan" for purge (did you mean "olderThanMs"?)',
    ],
    [
      'purge state',
      () => purge(outbox, backend, { state: ['dead'] } as never),
      '"state" for purge (did you mean "states"?)',
    ],
    [
      'redrive id',
      () => redrive(outbox, backend, { id: ['x'] } as never),
      '"id" for redrive (did you mean "ids"?)',
    ],
    [
      'discard topic',
      () => discard(outbox, backend, { topic: ['t'] } as never),
      '"topic" for discard (did you mean "topics"?)',
    ],
    [
      'listDead limt',
      () => listDead(outbox, backend, { limt: 5 } as never),
      '"limt" for listDead (did you mean "limit"?)',
    ],
    [
      'outboxStats delivered',
      () => outboxStats(outbox, backend, { delivered: true } as never),
      '"delivered" for outboxStats (did you mean "includeDelivered"?)',
    ],
    [
      'listBlockedKeys after',
      () => listBlockedKeys(outbox, backend, { after: 'k' } as never),
      '"after" for listBlockedKeys (did you mean "afterKey"?)',
    ],
  ])('%s → INVALID_CONFIG before any statement', async (_label, run, expected) => {
    expect(await refusal(run)).toContain(`unknown option ${expected}`)
  })

  test('options that are not an object → INVALID_CONFIG', async () => {
    expect(await refusal(() => purge(outbox, backend, 'all' as never))).toContain(
      'purge options must be an object',
    )
  })
})
