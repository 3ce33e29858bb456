import { DIALECTS, testDatabaseUrl } from '@outboxkit/conformance'
import { createRelay, defineOutbox, isOutboxError, migrate, type RelayOptions } from '@outboxkit/core'
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
