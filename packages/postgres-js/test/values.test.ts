import { serverInspector, testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import { defineOutbox, migrate } from '@outboxkit/core'
import { postgresJsBackend, publish, publishMany } from '@outboxkit/postgres-js'
import postgres from 'postgres'
import { afterAll, describe, expect, test } from 'vitest'

const inspector = serverInspector()
afterAll(() => inspector.close())

const tricky = [
  'plain',
  'with "quotes"',
  'back\\slash',
  'a,b',
  '{braces}',
  'NULL',
  '',
  'ünïcødé ✓ 日本語 🚀',
  "it's",
  ' spaced ',
]

/** Each configuration postgres.js users run with; the adapter must not depend on any of them. */
const configs: Record<string, postgres.Options<{}>> = {
  default: {},
  'fetch_types: false': { fetch_types: false },
  'prepare: false': { prepare: false },
  'transform: postgres.camel': { transform: postgres.camel },
  'transform: postgres.pascal': { transform: postgres.pascal },
  'transform: postgres.kebab': { transform: postgres.kebab },
}

describe.each(Object.entries(configs))('postgres.js with %s', (_label, options) => {
  const outbox = defineOutbox({ table: uniqueTableName('pjs_values') })
  const table = outbox.table.name
  let sql: postgres.Sql
  afterAll(async () => {
    await inspector.query(`DROP TABLE IF EXISTS ${table}`)
    await sql?.end()
  })

  test('publishMany round-trips strings, nulls and unicode in every array column exactly', async () => {
    sql = postgres(testDatabaseUrl(), { max: 2, onnotice: () => {}, ...options })
    await migrate(outbox, postgresJsBackend(sql))
    const msgs = tricky.map((s, i) => ({
      topic: `topic ${s}`,
      payload: { s, i },
      key: i % 3 === 0 ? null : s,
      headers: { h: s },
      dedupKey: i % 2 === 0 ? null : `dedup ${s}`,
      delayMs: i * 1.5,
    }))
    const results = await sql.begin((tx) => publishMany(outbox, tx, msgs))
    expect(results.every((r) => r.published)).toBe(true)
    const rows = await inspector.query(
      `SELECT id::text AS id, topic, key, dedup_key, headers->>'h' AS h, payload::text AS p,
              extract(epoch FROM available_at - created_at) * 1000 AS delay
       FROM ${table} ORDER BY id`,
    )
    expect(rows.map((r) => r.id)).toEqual(results.map((r) => r.id))
    rows.forEach((r, i) => {
      const m = msgs[i]!
      expect(r.topic).toBe(m.topic)
      expect(r.key).toBe(m.key)
      expect(r.dedup_key).toBe(m.dedupKey)
      expect(r.h).toBe(tricky[i])
      expect(JSON.parse(r.p as string)).toEqual(m.payload)
      expect(Number(r.delay)).toBeCloseTo(m.delayMs, 1)
    })
  })

  test('a JSON string payload is stored once-encoded: a jsonb string, not an object or a string of a string', async () => {
    const { id } = await sql.begin((tx) => publish(outbox, tx, { topic: 'json', payload: '{"a":1}' }))
    const [r] = await inspector.query(
      `SELECT jsonb_typeof(payload) AS t, payload #>> '{}' AS v FROM ${table} WHERE id = $1`,
      [id],
    )
    expect(r).toEqual({ t: 'string', v: '{"a":1}' })
    const obj = await sql.begin((tx) => publish(outbox, tx, { topic: 'json', payload: { a: [1, 'ü'] } }))
    const [o] = await inspector.query(
      `SELECT jsonb_typeof(payload) AS t, payload->'a'->>1 AS v FROM ${table} WHERE id = $1`,
      [obj.id],
    )
    expect(o).toEqual({ t: 'object', v: 'ü' })
  })

  test('a repeated dedupKey returns the existing id', async () => {
    const first = await sql.begin((tx) => publish(outbox, tx, { topic: 'd', payload: 1, dedupKey: 'same' }))
    const second = await sql.begin((tx) => publish(outbox, tx, { topic: 'd', payload: 2, dedupKey: 'same' }))
    expect(second).toEqual({ id: first.id, published: false })
  })

  test('the relay backend claims with every field and settles', async () => {
    const backend = postgresJsBackend(sql)
    await inspector.query(`DELETE FROM ${table}`)
    const { id } = await sql.begin((tx) =>
      publish(outbox, tx, { topic: 'c', payload: { x: 1 }, key: 'k', headers: { a: 'b' } }),
    )
    await inspector.query(`UPDATE ${table} SET last_error = 'earlier' WHERE id = $1`, [id])
    const [c] = await backend.claim({
      table: outbox.table,
      topics: ['c'],
      limit: 5,
      leaseMs: 10_000,
      maxAttempts: 5,
    })
    expect(c).toMatchObject({
      id,
      topic: 'c',
      key: 'k',
      attempts: 1,
      state: 'processing',
      lastError: 'earlier',
    })
    expect(JSON.parse(c!.payload)).toEqual({ x: 1 })
    expect(JSON.parse(c!.headers)).toEqual({ a: 'b' })
    expect(Math.abs(c!.createdAtMs - Date.now())).toBeLessThan(60_000)
    expect(
      await backend.settle({
        table: outbox.table,
        keepDelivered: false,
        settlements: [{ id, attempts: 1, outcome: 'delivered' }],
      }),
    ).toEqual([id])
    expect(await backend.purge({ table: outbox.table, states: ['dead'], olderThanMs: 0 })).toBe(0)
  })
})
