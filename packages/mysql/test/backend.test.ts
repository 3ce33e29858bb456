import { randomUUID } from 'node:crypto'
import {
  OUTBOX_COLUMNS,
  settleDelivered,
  testMysqlUri,
  usePausableProxy,
  waitFor,
} from '@outboxkit/conformance'
import {
  createRelay,
  defineOutbox,
  migrate,
  type Outbox,
  type OutboxBackend,
  OutboxError,
} from '@outboxkit/core'
import type { ClaimRequest } from '@outboxkit/core/adapter'
import { mysqlBackend, publishMany } from '@outboxkit/mysql'
import { afterAll, afterEach, describe, expect, test } from 'vitest'
import { MysqlFixture, testPool } from './support.js'

const f = new MysqlFixture()
const backends: OutboxBackend[] = []
/** A backend that owns its pool (from the URI), closed after each test. */
function owned(options: { commandTimeoutMs?: number; uri?: string } = {}): OutboxBackend {
  const b = mysqlBackend({ uri: testMysqlUri(), connectionLimit: 4, ...options })
  backends.push(b)
  return b
}
afterEach(async () => {
  await Promise.all(backends.splice(0).map((b) => b.close()))
})
afterAll(() => f.close())

/** Inserts `n` rows straight into the table (bypassing publish) and returns their ids in order. */
async function seed(
  outbox: Outbox,
  n: number,
  fields: {
    topic?: string
    state?: string
    attempts?: number
    availableInMs?: number
    key?: string
    seq?: number
  } = {},
): Promise<string[]> {
  const ids = Array.from({ length: n }, () => randomUUID())
  const rows = ids.map(
    () => `(?, ?, ?, '{"i":1}', ?, ?, DATE_ADD(UTC_TIMESTAMP(6), INTERVAL ? MICROSECOND), ?)`,
  )
  await f.query(
    `INSERT INTO \`${outbox.table.name}\` (id, topic, \`key\`, payload, state, attempts, available_at, seq) VALUES ${rows.join(', ')}`,
    ids.flatMap((id, i) => [
      id,
      fields.topic ?? 't',
      fields.key ?? null,
      fields.state ?? 'pending',
      fields.attempts ?? 0,
      Math.round((fields.availableInMs ?? -1000) * 1000),
      fields.seq === undefined ? null : fields.seq + i,
    ]),
  )
  return ids
}

async function rowOf(outbox: Outbox, id: string) {
  const [r] = await f.query(
    `SELECT state, attempts, last_error, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), available_at) / 1000 AS due_in_ms
     FROM \`${outbox.table.name}\` WHERE id = ?`,
    [id],
  )
  return (
    r && {
      state: String(r.state),
      attempts: Number(r.attempts),
      last_error: r.last_error === null ? null : String(r.last_error),
      due_in_ms: Number(r.due_in_ms),
    }
  )
}

const request = (outbox: Outbox, over: Partial<ClaimRequest> = {}): ClaimRequest => ({
  table: outbox.table,
  topics: ['t'],
  limit: 10,
  leaseMs: 30_000,
  maxAttempts: 10,
  ...over,
})

describe('mysqlBackend', () => {
  test('migrate is idempotent and safe to run concurrently; the DDL keeps the PostgreSQL column names', async () => {
    const outbox = defineOutbox({ table: `ok_my_mig_${process.pid}` })
    const others = [owned(), owned(), owned()]
    try {
      await Promise.all(others.map((b) => migrate(outbox, b)))
      await migrate(outbox, others[0]!)
      const cols = await f.query(
        `SELECT column_name AS c FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position`,
        [outbox.table.name],
      )
      expect(cols.map((r) => r.c)).toEqual(expect.arrayContaining([...OUTBOX_COLUMNS]))
      // No ordered topics: no keys table.
      const keys = await f.query(
        `SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`,
        [`${outbox.table.name}_keys`],
      )
      expect(keys).toEqual([])
    } finally {
      await f.query(`DROP TABLE IF EXISTS \`${outbox.table.name}\``)
    }
  })

  test('claim takes due rows of its topics, counts the attempt and writes the lease, in (available_at, id) order', async () => {
    const outbox = await f.outbox('claim')
    const b = mysqlBackend({ pool: f.pool })
    const early = await seed(outbox, 1, { availableInMs: -5_000 })
    const due = await seed(outbox, 3)
    await seed(outbox, 2, { availableInMs: 60_000 })
    await seed(outbox, 2, { topic: 'other' })
    await seed(outbox, 2, { state: 'dead' })
    const first = await b.claim(request(outbox, { limit: 1, leaseMs: 20_000 }))
    expect(first.map((c) => c.id)).toEqual(early)
    const rest = await b.claim(request(outbox, { leaseMs: 20_000 }))
    expect(rest.map((c) => c.id).sort()).toEqual([...due].sort())
    for (const c of [...first, ...rest]) {
      expect(c).toMatchObject({ state: 'processing', attempts: 1 })
      expect(JSON.parse(c.payload)).toEqual({ i: 1 })
      expect(JSON.parse(c.headers)).toEqual({})
      const r = await rowOf(outbox, c.id)
      expect(r!.state).toBe('processing')
      expect(r!.attempts).toBe(1)
      expect(r!.due_in_ms).toBeGreaterThan(15_000)
      expect(r!.due_in_ms).toBeLessThanOrEqual(20_000)
    }
    expect(await b.claim(request(outbox))).toEqual([])
  })

  test('claims of two backends running concurrently are disjoint: every row exactly once', async () => {
    const outbox = await f.outbox('disjoint')
    const ids = await seed(outbox, 600)
    const seen: string[] = []
    await Promise.all(
      [owned(), owned(), mysqlBackend({ pool: f.pool })].flatMap((b) =>
        // Several claimers per backend, like a relay's claim loop on several replicas.
        [0, 1].map(async () => {
          for (;;) {
            const got = await b.claim(request(outbox, { limit: 7 }))
            if (got.length === 0) return
            seen.push(...got.map((g) => g.id))
          }
        }),
      ),
    )
    expect(seen).toHaveLength(600)
    expect(new Set(seen).size).toBe(600)
    expect([...seen].sort()).toEqual([...ids].sort())
  })

  test('a lapsed lease makes the row claimable again, with the attempt counted', async () => {
    const outbox = await f.outbox('lease')
    const b = mysqlBackend({ pool: f.pool })
    const [id] = await seed(outbox, 1)
    const [c1] = await b.claim(request(outbox, { leaseMs: 300 }))
    expect(c1!.attempts).toBe(1)
    expect(await b.claim(request(outbox))).toEqual([])
    const c2 = await waitFor(async () => (await b.claim(request(outbox)))[0], { what: 'the lease to lapse' })
    expect(c2.id).toBe(id)
    expect(c2.attempts).toBe(2)
  })

  test('a row that used maxAttempts is dead-lettered at claim, with the reason, and not returned for delivery', async () => {
    const outbox = await f.outbox('dead_at_claim')
    const b = mysqlBackend({ pool: f.pool })
    const [id] = await seed(outbox, 1, { state: 'processing', attempts: 3 })
    const [live] = await seed(outbox, 1, { attempts: 2 })
    await f.query(`UPDATE \`${outbox.table.name}\` SET last_error = 'boom' WHERE id = ?`, [id])
    const claimed = await b.claim(request(outbox, { maxAttempts: 3 }))
    const dead = claimed.find((c) => c.id === id)!
    expect(dead.state).toBe('dead')
    expect(dead.attempts).toBe(3)
    expect(dead.lastError).toMatch(/lease expired after attempt 3 of 3.*boom/)
    expect(claimed.find((c) => c.id === live)).toMatchObject({ state: 'processing', attempts: 3 })
    const r = await rowOf(outbox, id!)
    expect(r!.state).toBe('dead')
    expect(r!.attempts).toBe(3)
    expect(r!.last_error).toBe(dead.lastError)
    expect(await b.claim(request(outbox, { maxAttempts: 3 }))).toEqual([])
  })

  test('settles are batched and fenced by attempts and state: a stale relay changes nothing', async () => {
    const outbox = await f.outbox('fence')
    const b = mysqlBackend({ pool: f.pool })
    const [id] = await seed(outbox, 1)
    await b.claim(request(outbox, { leaseMs: 1 }))
    await f.query(
      `UPDATE \`${outbox.table.name}\` SET available_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE id = ?`,
      [id],
    )
    const [again] = await b.claim(request(outbox))
    expect(again!.attempts).toBe(2)
    for (const s of [
      { id: id!, attempts: 1, outcome: 'delivered' as const },
      { id: id!, attempts: 1, outcome: 'retry' as const, delayMs: 0, error: 'stale' },
      { id: id!, attempts: 1, outcome: 'dead' as const, error: 'stale' },
    ]) {
      expect(await b.settle({ table: outbox.table, keepDelivered: false, settlements: [s] })).toEqual([])
      expect(await rowOf(outbox, id!)).toMatchObject({ state: 'processing', attempts: 2, last_error: null })
    }
    const more = await seed(outbox, 3)
    const [x, y, z] = await b.claim(request(outbox))
    expect([x, y, z].map((c) => c!.id).sort()).toEqual([...more].sort())
    const applied = await b.settle({
      table: outbox.table,
      keepDelivered: false,
      settlements: [
        { id: id!, attempts: 2, outcome: 'delivered' },
        { id: x!.id, attempts: 1, outcome: 'retry', delayMs: 45_000, error: 'try later' },
        { id: y!.id, attempts: 1, outcome: 'dead', error: 'give up' },
        { id: z!.id, attempts: 9, outcome: 'delivered' }, // stale
      ],
    })
    expect(applied.sort()).toEqual([id!, x!.id, y!.id].sort())
    expect(await rowOf(outbox, id!)).toBeUndefined()
    const rx = await rowOf(outbox, x!.id)
    expect(rx).toMatchObject({ state: 'pending', last_error: 'try later' })
    expect(rx!.due_in_ms).toBeGreaterThan(40_000)
    expect(await rowOf(outbox, y!.id)).toMatchObject({ state: 'dead', last_error: 'give up' })
    expect(await rowOf(outbox, z!.id)).toMatchObject({ state: 'processing' })
    // keepDelivered keeps the row, state delivered; a settle after dead-letter at claim is fenced by state.
    expect(await settleDelivered(b, outbox, { id: z!.id, attempts: 1 }, true)).toEqual([z!.id])
    expect(await rowOf(outbox, z!.id)).toMatchObject({ state: 'delivered' })
    expect(await settleDelivered(b, outbox, { id: y!.id, attempts: 1 }, false)).toEqual([])
  })

  test('extendLease pushes the lease of a live claim only', async () => {
    const outbox = await f.outbox('extend')
    const b = mysqlBackend({ pool: f.pool })
    const [id] = await seed(outbox, 1)
    await b.claim(request(outbox, { leaseMs: 1_000 }))
    expect(
      await b.extendLease!({ table: outbox.table, leaseMs: 60_000, rows: [{ id: id!, attempts: 1 }] }),
    ).toEqual([id])
    expect((await rowOf(outbox, id!))!.due_in_ms).toBeGreaterThan(50_000)
    expect(
      await b.extendLease!({ table: outbox.table, leaseMs: 60_000, rows: [{ id: id!, attempts: 7 }] }),
    ).toEqual([])
  })

  test('stats, listDead (paged), discard, redrive and purge', async () => {
    const outbox = await f.outbox('admin')
    const b = mysqlBackend({ pool: f.pool })
    const dead = await seed(outbox, 5, { state: 'dead', attempts: 10 })
    await seed(outbox, 2, { state: 'delivered' })
    await seed(outbox, 3, { availableInMs: -2_000 })
    const stats = await b.stats!({ table: outbox.table })
    const pending = stats.find((s) => s.state === 'pending')!
    expect(pending.count).toBe(3)
    expect(pending.oldestDueLagMs).toBeGreaterThanOrEqual(1_900)
    expect(stats.find((s) => s.state === 'dead')!.count).toBe(5)
    expect(stats.some((s) => s.state === 'delivered')).toBe(false)
    expect(
      (await b.stats!({ table: outbox.table, includeDelivered: true })).some((s) => s.state === 'delivered'),
    ).toBe(true)
    const page1 = await b.listDead!({ table: outbox.table, limit: 3 })
    const last = page1.at(-1)!
    const page2 = await b.listDead!({
      table: outbox.table,
      limit: 3,
      after: { deadAtMs: last.deadAtMs, id: last.id },
    })
    expect([...page1, ...page2].map((d) => d.id).sort()).toEqual([...dead].sort())
    expect(page2).toHaveLength(2)
    expect(page1[0]).toMatchObject({ topic: 't', attempts: 10 })
    expect(JSON.parse(page1[0]!.payload)).toEqual({ i: 1 })
    expect(await b.discard!({ table: outbox.table, ids: [dead[0]!] })).toBe(1)
    expect(await b.redrive({ table: outbox.table, ids: [dead[1]!] })).toBe(1)
    expect(await rowOf(outbox, dead[1]!)).toMatchObject({ state: 'pending', attempts: 0 })
    expect(await b.redrive({ table: outbox.table, ids: [] })).toBe(0)
    expect(await b.purge({ table: outbox.table, states: ['delivered'], olderThanMs: 3_600_000 })).toBe(0)
    expect(await b.purge({ table: outbox.table, states: ['dead', 'delivered'], olderThanMs: 0 })).toBe(5)
    expect(await f.count(outbox)).toBe(4)
  })

  test('every time is the server clock in UTC, whatever the session time_zone', async () => {
    const outbox = await f.outbox('tz')
    const pool = testPool({ connectionLimit: 2 })
    pool.on('connection', (c) => {
      ;(c as unknown as { query(sql: string): void }).query(`SET time_zone = '+09:00'`)
    })
    try {
      const conn = await pool.getConnection()
      await conn.beginTransaction()
      const [m] = await publishMany(outbox, conn, [{ topic: 't', payload: 1, delayMs: 0 }])
      await conn.commit()
      conn.release()
      const b = mysqlBackend({ pool })
      const [c] = await b.claim(request(outbox, { leaseMs: 10_000 }))
      expect(c?.id).toBe(m!.id)
      expect(Math.abs(c!.createdAtMs - Date.now())).toBeLessThan(60_000)
      expect((await rowOf(outbox, m!.id))!.due_in_ms).toBeLessThanOrEqual(10_000)
    } finally {
      await pool.end()
    }
  })

  test('owns only what it creates: { pool } stays open after close(), { uri } ends its pool and reopens on use', async () => {
    const outbox = await f.outbox('owns')
    const shared = mysqlBackend({ pool: f.pool })
    await shared.claim(request(outbox))
    await shared.close()
    const [r] = await f.pool.query('SELECT 1 AS one')
    expect((r as { one: number }[])[0]!.one).toBe(1)
    const own = mysqlBackend({ uri: testMysqlUri() })
    await own.claim(request(outbox))
    await own.close()
    await own.close()
    expect(await own.claim(request(outbox))).toEqual([])
    await own.close()
  })

  test('invalid options are refused with INVALID_CONFIG', () => {
    for (const bad of [
      undefined,
      {},
      { pool: {} },
      { uri: '' },
      { uri: testMysqlUri(), commandTimeoutMs: 0 },
      { pool: f.pool, commandTimeoutMs: -1 },
    ]) {
      let err: unknown
      try {
        mysqlBackend(bad as never)
      } catch (e) {
        err = e
      }
      expect(err, String(bad && Object.keys(bad))).toBeInstanceOf(OutboxError)
      expect((err as OutboxError).code).toBe('INVALID_CONFIG')
    }
  })

  test('an unknown option is refused with INVALID_CONFIG, naming it and the closest valid one', async () => {
    const refusal = (options: unknown) => {
      let err: unknown
      try {
        mysqlBackend(options as never)
      } catch (e) {
        err = e
      }
      expect(err, JSON.stringify(Object.keys(options as object))).toBeInstanceOf(OutboxError)
      expect((err as OutboxError).code).toBe('INVALID_CONFIG')
      expect((err as OutboxError).message).toMatch(/^\[outboxkit\] \[mysql\] /)
      return (err as OutboxError).message
    }
    const typo = refusal({ uri: testMysqlUri(), comandTimeoutMs: 5_000 })
    expect(typo).toContain('unknown option "comandTimeoutMs" for mysqlBackend({ uri })')
    expect(typo).toContain('(did you mean "commandTimeoutMs"?)')
    expect(refusal({ uri: testMysqlUri(), connectTimeOut: 1_000 })).toContain(
      '(did you mean "connectTimeout"?)',
    )
    const onPool = refusal({ pool: f.pool, connectionLimit: 4 })
    expect(onPool).toContain('unknown option "connectionLimit" for mysqlBackend({ pool })')
    expect(onPool).toContain('Valid options: commandTimeoutMs, pool.')
    // An option of another backend: nothing close enough, the valid names are listed instead.
    const other = refusal({ uri: testMysqlUri(), busyTimeoutMs: 5_000 })
    expect(other).toContain('unknown option "busyTimeoutMs"')
    expect(other).not.toContain('did you mean')
    expect(other).toContain("the options of mysql2's createPool")
    // mysql2's pool options and outboxkit's own pass.
    await mysqlBackend({
      uri: testMysqlUri(),
      connectionLimit: 2,
      timezone: 'Z',
      commandTimeoutMs: 5_000,
    }).close()
    await mysqlBackend({ pool: f.pool, commandTimeoutMs: 5_000 }).close()
  })
})

describe('ordered topics on mysqlBackend', () => {
  test('only the head of a key is claimed; a settled head lets the next one go; a dead head blocks unless continue', async () => {
    const outbox = await f.outbox('ordered_claim', {
      orderedTopics: ['t', { topic: 'c', onDeadLetter: 'continue' }],
    })
    const b = mysqlBackend({ pool: f.pool })
    const ordering = { continueAfterDead: ['c'] }
    const k1 = await seed(outbox, 3, { key: 'k1', seq: 1 })
    const k2 = await seed(outbox, 2, { key: 'k2', seq: 1 })
    const free = await seed(outbox, 2, { key: 'k1' }) // unordered rows of the same key
    const first = await b.claim(request(outbox, { ordering }))
    expect(first.map((c) => c.id).sort()).toEqual([k1[0], k2[0], ...free].sort())
    expect(
      first
        .filter((c) => c.ordered)
        .map((c) => c.id)
        .sort(),
    ).toEqual([k1[0], k2[0]].sort())
    expect(await b.claim(request(outbox, { ordering }))).toEqual([])
    await b.settle({
      table: outbox.table,
      keepDelivered: false,
      settlements: [
        { id: k1[0]!, attempts: 1, outcome: 'delivered' },
        { id: k2[0]!, attempts: 1, outcome: 'dead', error: 'x' },
      ],
    })
    expect((await b.claim(request(outbox, { ordering }))).map((c) => c.id)).toEqual([k1[1]])
    const blocked = await b.blockedKeys!({
      table: outbox.table,
      continueAfterDead: ['c'],
      includeRetrying: false,
      limit: 10,
    })
    expect(blocked).toEqual([
      expect.objectContaining({
        key: 'k2',
        headId: k2[0],
        headState: 'dead',
        headLastError: 'x',
        waiting: 1,
      }),
    ])
    // A 'continue' topic's dead head does not block.
    const c = await seed(outbox, 2, { topic: 'c', key: 'k3', seq: 1 })
    await f.query(`UPDATE \`${outbox.table.name}\` SET state = 'dead' WHERE id = ?`, [c[0]])
    const next = await b.claim(request(outbox, { topics: ['c'], ordering }))
    expect(next.map((r) => r.id)).toEqual([c[1]])
  })

  test('relays on several backends never run two messages of one key at once, and deliver each key in order', async () => {
    const outbox = await f.outbox('ordered_relay', { orderedTopics: ['t'] })
    const keys = 8
    const perKey = 15
    const conn = await f.pool.getConnection()
    await conn.beginTransaction()
    for (let i = 0; i < perKey; i++) {
      await publishMany(
        outbox,
        conn,
        Array.from({ length: keys }, (_, k) => ({ topic: 't', key: `k${k}`, payload: { k, i } })),
      )
    }
    await conn.commit()
    conn.release()
    const running = new Set<number>()
    const delivered = new Map<number, number[]>()
    let overlap = false
    const relays = [owned(), owned(), owned()].map((backend) =>
      createRelay(outbox, {
        backend,
        pollIntervalMs: 20,
        concurrency: 8,
        handlers: {
          t: async (m) => {
            const { k, i } = m.payload as { k: number; i: number }
            if (running.has(k)) overlap = true
            running.add(k)
            await new Promise((r) => setTimeout(r, Math.random() * 3))
            running.delete(k)
            delivered.set(k, [...(delivered.get(k) ?? []), i])
          },
        },
      }),
    )
    await Promise.all(relays.map((r) => r.start()))
    try {
      await waitFor(() => [...delivered.values()].flat().length === keys * perKey, {
        timeoutMs: 30_000,
        what: 'every message',
      })
    } finally {
      await Promise.all(relays.map((r) => r.stop()))
    }
    expect(overlap).toBe(false)
    for (let k = 0; k < keys; k++)
      expect(delivered.get(k)).toEqual(Array.from({ length: perKey }, (_, i) => i))
  })
})

describe('commandTimeoutMs through a frozen network', () => {
  const proxy = usePausableProxy(testMysqlUri(), 3306)

  test('a claim through the paused proxy fails with TIMEOUT within the bound, and works again after', async () => {
    const outbox = await f.outbox('timeout')
    const b = owned({ uri: proxy.url, commandTimeoutMs: 500 })
    expect(await b.claim(request(outbox))).toEqual([]) // a pooled connection is now open through the proxy
    proxy.pause()
    for (const backend of [b, owned({ uri: proxy.url, commandTimeoutMs: 500 })]) {
      const t0 = Date.now()
      const err = await backend.claim(request(outbox)).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(err).toBeInstanceOf(OutboxError)
      expect((err as OutboxError).code, String(err)).toBe('TIMEOUT')
      expect((err as OutboxError).source).toBe('mysql')
      expect(Date.now() - t0).toBeLessThan(3_000)
    }
    proxy.resume()
    await seed(outbox, 1)
    const got = await waitFor(async () => (await b.claim(request(outbox))).length, {
      what: 'a claim after resume',
    })
    expect(got).toBe(1)
  })
})
