import { defineOutbox, migrate, type Outbox, type OutboxBackend } from '@outboxkit/core'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { uniqueTableName, waitFor } from './database.js'
import { type IndexInfo, type OutboxDialect, type OutboxSql, outboxSql } from './dialect-sql.js'

/** What a backend's test file gives {@link runBackendConformance}. */
export interface BackendHarness {
  /** Backend name, e.g. `'pg'`. */
  name: string
  /** Opens the backend under test plus a raw-SQL inspector on a separate connection. */
  setup(): Promise<BackendContext>
}

/** The backend under test and how the suite looks at its database. */
export interface BackendContext {
  /** The database's SQL dialect: how the suite writes its raw SQL. Default `'postgres'`. */
  dialect?: OutboxDialect
  /** Creates a fresh backend instance (called for each simulated relay). */
  backend(): OutboxBackend
  /**
   * Raw SQL outside the backend under test (PGlite: the same instance), written for
   * {@link BackendContext.dialect} with its own placeholders (`$1` PostgreSQL, `?` MySQL and
   * SQLite); returns plain rows.
   */
  inspect(text: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  /** Whether `listen` must work (PostgreSQL: yes; SQLite: the in-process wake; MySQL: no). */
  supportsListen: boolean
  /**
   * What wakes `listen` on `outbox.channel`: PostgreSQL's default is `pg_notify` through
   * `inspect`; other dialects with `supportsListen` must give it (SQLite: a committed publish in
   * this process).
   */
  wake?(outbox: Outbox): Promise<void>
  teardown(): Promise<void>
}

/**
 * The backend conformance suite: the MUST rules of `OutboxBackend` (disjoint claims, lease,
 * attempts at claim, dead-letter at claim, fenced settles, purge, redrive, listen), asserted
 * through raw SQL.
 */
export function runBackendConformance(harness: BackendHarness): void {
  describe(`backend conformance: ${harness.name}`, () => {
    let ctx: BackendContext
    let sql: OutboxSql
    let dialect: OutboxDialect
    let backend: OutboxBackend
    let outbox: Outbox
    let table: string
    const lease = 30_000

    const insert = (
      n: number,
      fields: {
        topic?: string
        state?: 'pending' | 'processing' | 'delivered' | 'dead'
        attempts?: number
        availableInMs?: number
      } = {},
    ) =>
      sql.insert(
        table,
        Array.from({ length: n }, (_, i) => ({
          topic: fields.topic ?? 't',
          payload: { i: i + 1 },
          state: fields.state ?? 'pending',
          attempts: fields.attempts ?? 0,
          availableInMs: fields.availableInMs ?? -1000,
        })),
      )
    const row = (id: string) => sql.row(table, id)
    const claim = (
      limit: number,
      opts: { topics?: string[]; leaseMs?: number; maxAttempts?: number; b?: OutboxBackend } = {},
    ) =>
      (opts.b ?? backend).claim({
        table: outbox.table,
        topics: opts.topics ?? ['t'],
        limit,
        leaseMs: opts.leaseMs ?? lease,
        maxAttempts: opts.maxAttempts ?? 10,
      })

    beforeAll(async () => {
      ctx = await harness.setup()
      dialect = ctx.dialect ?? 'postgres'
      sql = outboxSql(dialect, (text, params) => ctx.inspect(text, params))
      backend = ctx.backend()
      table = uniqueTableName(`be_${harness.name}`)
      outbox = defineOutbox({ table })
    })
    beforeEach(async () => {
      await migrate(outbox, backend)
      await sql.clear(table)
    })
    afterAll(async () => {
      await sql?.drop(table).catch(() => {})
      await backend?.close()
      await ctx?.teardown()
    })

    test('migrate is idempotent and safe to run concurrently', async () => {
      const fresh = defineOutbox({ table: uniqueTableName(`mig_${harness.name}`) })
      const others = [ctx.backend(), ctx.backend()]
      try {
        await Promise.all([migrate(fresh, backend), migrate(fresh, others[0]!), migrate(fresh, others[1]!)])
        await migrate(fresh, backend)
        expectOutboxIndexes(dialect, await sql.indexes(fresh.table.name))
      } finally {
        await sql.drop(fresh.table.name)
        await Promise.all(others.map((b) => b.close()))
      }
    })

    test('claim takes due rows, counts the attempt and writes the lease', async () => {
      const ids = await insert(3)
      await insert(2, { availableInMs: 60_000 })
      await insert(2, { topic: 'other' })
      const claimed = await claim(10, { leaseMs: 20_000 })
      expect(claimed.map((c) => c.id).sort()).toEqual([...ids].sort())
      for (const c of claimed) {
        expect(c.state).toBe('processing')
        expect(c.attempts).toBe(1)
        expect(JSON.parse(c.payload)).toHaveProperty('i')
        expect(JSON.parse(c.headers)).toEqual({})
        const r = await row(c.id)
        expect(r!.state).toBe('processing')
        expect(Number(r!.attempts)).toBe(1)
        expect(Number(r!.due_in_ms)).toBeGreaterThan(15_000)
        expect(Number(r!.due_in_ms)).toBeLessThanOrEqual(20_000)
      }
      expect(await claim(10)).toEqual([])
    })

    test('claim respects its limit and the (available_at, id) order', async () => {
      const early = await insert(1, { availableInMs: -5_000 })
      await insert(5)
      const first = await claim(1)
      expect(first.map((c) => c.id)).toEqual(early)
      expect(await claim(3)).toHaveLength(3)
    })

    test('concurrent claims are disjoint: every row is claimed exactly once', async () => {
      const ids = await insert(300)
      const relays = [ctx.backend(), ctx.backend(), ctx.backend()]
      const seen: string[] = []
      try {
        await Promise.all(
          [backend, ...relays].map(async (b) => {
            for (;;) {
              const got = await claim(7, { b })
              if (got.length === 0) return
              seen.push(...got.map((g) => g.id))
            }
          }),
        )
      } finally {
        await Promise.all(relays.map((b) => b.close()))
      }
      expect(seen).toHaveLength(300)
      expect(new Set(seen).size).toBe(300)
      expect([...seen].sort()).toEqual([...ids].sort())
    })

    test('a lapsed lease makes the row claimable again, with the attempt counted', async () => {
      const [id] = await insert(1)
      const [c1] = await claim(1, { leaseMs: 300 })
      expect(c1!.attempts).toBe(1)
      expect(await claim(1)).toEqual([])
      const c2 = await waitFor(async () => (await claim(1))[0], {
        what: 'the lease to lapse',
        timeoutMs: 5_000,
      })
      expect(c2.id).toBe(id)
      expect(c2.attempts).toBe(2)
    })

    test('a row that used maxAttempts is dead-lettered at claim, not returned for delivery', async () => {
      const [id] = await insert(1, { state: 'processing', attempts: 3 })
      await sql.update(table, id!, { lastError: 'boom' })
      const [c] = await claim(5, { maxAttempts: 3 })
      expect(c!.id).toBe(id)
      expect(c!.state).toBe('dead')
      expect(c!.attempts).toBe(3)
      const r = await row(id!)
      expect(r!.state).toBe('dead')
      expect(Number(r!.attempts)).toBe(3)
      expect(String(r!.last_error)).toMatch(/lease expired after attempt 3 of 3.*boom/)
      expect(await claim(5, { maxAttempts: 3 })).toEqual([])
    })

    test('settle: delivered deletes, or keeps with state delivered', async () => {
      const ids = await insert(2)
      const [a, b] = await claim(2)
      expect(
        await backend.settle({
          table: outbox.table,
          keepDelivered: false,
          settlements: [{ id: a!.id, attempts: 1, outcome: 'delivered' }],
        }),
      ).toEqual([a!.id])
      expect(await row(a!.id)).toBeUndefined()
      await backend.settle({
        table: outbox.table,
        keepDelivered: true,
        settlements: [{ id: b!.id, attempts: 1, outcome: 'delivered' }],
      })
      expect((await row(b!.id))!.state).toBe('delivered')
      expect(ids).toHaveLength(2)
    })

    test('settle: retry reschedules with the error, dead dead-letters with the error, in one batch', async () => {
      await insert(3)
      const [a, b, c] = await claim(3)
      const applied = await backend.settle({
        table: outbox.table,
        keepDelivered: false,
        settlements: [
          { id: a!.id, attempts: 1, outcome: 'retry', delayMs: 45_000, error: 'try later' },
          { id: b!.id, attempts: 1, outcome: 'dead', error: 'give up' },
          { id: c!.id, attempts: 1, outcome: 'delivered' },
        ],
      })
      expect(applied.sort()).toEqual([a!.id, b!.id, c!.id].sort())
      const ra = await row(a!.id)
      expect(ra!.state).toBe('pending')
      expect(ra!.last_error).toBe('try later')
      expect(Number(ra!.due_in_ms)).toBeGreaterThan(40_000)
      const rb = await row(b!.id)
      expect(rb!.state).toBe('dead')
      expect(rb!.last_error).toBe('give up')
      expect(await row(c!.id)).toBeUndefined()
    })

    test('settles are fenced by attempts: a stale relay cannot overwrite a newer claim', async () => {
      const [id] = await insert(1)
      await claim(1, { leaseMs: 1 })
      await sql.update(table, id!, { availableInMs: -1000 })
      const [again] = await claim(1)
      expect(again!.attempts).toBe(2)
      for (const outcome of ['delivered', 'retry', 'dead'] as const) {
        const s =
          outcome === 'delivered'
            ? { id: id!, attempts: 1, outcome }
            : outcome === 'retry'
              ? { id: id!, attempts: 1, outcome, delayMs: 0, error: 'stale' }
              : { id: id!, attempts: 1, outcome, error: 'stale' }
        expect(await backend.settle({ table: outbox.table, keepDelivered: false, settlements: [s] })).toEqual(
          [],
        )
        const r = await row(id!)
        expect(r!.state).toBe('processing')
        expect(Number(r!.attempts)).toBe(2)
        expect(r!.last_error).toBeNull()
      }
      expect(
        await backend.settle({
          table: outbox.table,
          keepDelivered: false,
          settlements: [{ id: id!, attempts: 2, outcome: 'delivered' }],
        }),
      ).toEqual([id])
    })

    test('a settle after dead-letter at claim is fenced by state', async () => {
      const [id] = await insert(1, { state: 'processing', attempts: 2 })
      await claim(1, { maxAttempts: 2 })
      expect((await row(id!))!.state).toBe('dead')
      expect(
        await backend.settle({
          table: outbox.table,
          keepDelivered: false,
          settlements: [{ id: id!, attempts: 2, outcome: 'delivered' }],
        }),
      ).toEqual([])
      expect((await row(id!))!.state).toBe('dead')
    })

    test('extendLease pushes the lease of a live claim only', async () => {
      if (!backend.extendLease) return
      const [id] = await insert(1)
      await claim(1, { leaseMs: 1_000 })
      expect(
        await backend.extendLease({ table: outbox.table, leaseMs: 60_000, rows: [{ id: id!, attempts: 1 }] }),
      ).toEqual([id])
      expect(Number((await row(id!))!.due_in_ms)).toBeGreaterThan(50_000)
      expect(
        await backend.extendLease({ table: outbox.table, leaseMs: 60_000, rows: [{ id: id!, attempts: 7 }] }),
      ).toEqual([])
    })

    test('purge deletes terminal rows only; redrive revives dead rows with attempts reset', async () => {
      const dead = await insert(3, { state: 'dead', attempts: 10 })
      const delivered = await insert(2, { state: 'delivered' })
      const pending = await insert(1)
      await sql.update(table, dead[2]!, { topic: 'x' })
      expect(await backend.redrive({ table: outbox.table, ids: [dead[0]!] })).toBe(1)
      const r = await row(dead[0]!)
      expect(r!.state).toBe('pending')
      expect(Number(r!.attempts)).toBe(0)
      expect(await backend.redrive({ table: outbox.table, topics: ['x'] })).toBe(1)
      expect(
        await backend.purge({ table: outbox.table, states: ['delivered'], olderThanMs: 3_600_000 }),
      ).toBe(0)
      expect(await backend.purge({ table: outbox.table, states: ['delivered'], olderThanMs: 0 })).toBe(2)
      expect(
        await backend.purge({ table: outbox.table, states: ['dead', 'delivered'], olderThanMs: 0 }),
      ).toBe(1)
      const left = await sql.rows(table)
      expect(left.map((l) => l.id).sort()).toEqual([dead[0], dead[2], pending[0]].sort())
      expect(delivered).toHaveLength(2)
    })

    test('listen wakes on a NOTIFY sent by a committed transaction', async (t) => {
      // No listen on this backend (MySQL has no NOTIFY): the relay polls, and the docs say so.
      if (!ctx.supportsListen) t.skip()
      expect(backend.listen, 'supportsListen is set, so backend.listen must exist').toBeTypeOf('function')
      if (dialect !== 'postgres' && !ctx.wake) {
        throw new Error(`[outboxkit] [conformance] supportsListen on ${dialect} needs BackendContext.wake`)
      }
      let wakes = 0
      let connected = false
      const sub = await backend.listen!(outbox.channel, {
        onWake: () => wakes++,
        onError: () => {},
        onConnect: () => {
          connected = true
        },
      })
      try {
        await waitFor(() => connected, { what: 'the LISTEN connection' })
        if (ctx.wake) await ctx.wake(outbox)
        else await ctx.inspect(`SELECT pg_notify($1, '')`, [outbox.channel])
        await waitFor(() => wakes > 0, { what: 'a wake-up' })
      } finally {
        await sub.close()
      }
    })
  })
}

/**
 * The indexes `migrate` must create. PostgreSQL: the partial `(available_at, id)` index of live
 * rows that serves the claim, and the partial unique index on `dedup_key`. SQLite: the same,
 * partial too. MySQL (no partial indexes): the same on generated columns derived from
 * `available_at` (NULL for terminal rows) and from `dedup_key` (e.g. a hash).
 */
function expectOutboxIndexes(dialect: OutboxDialect, indexes: IndexInfo[]): void {
  if (dialect === 'postgres') {
    const defs = indexes.map((i) => i.definition ?? '')
    expect(defs.some((d) => /\(available_at, id\) WHERE/.test(d) && /pending/.test(d))).toBe(true)
    expect(defs.some((d) => /UNIQUE INDEX .*\(dedup_key\) WHERE \(dedup_key IS NOT NULL\)/.test(d))).toBe(
      true,
    )
    return
  }
  const described = JSON.stringify(indexes)
  /** Column `i` of `index` is `column`, or (MySQL) a generated column computed from it. */
  const covers = (index: IndexInfo, i: number, column: string) =>
    index.columns[i] === column || (index.generated?.[i] ?? '').includes(column)
  const claimIndex = indexes.find(
    (x) =>
      x.columns.length === 2 &&
      covers(x, 0, 'available_at') &&
      x.columns[1] === 'id' &&
      (dialect === 'sqlite'
        ? x.partial === true && /pending/.test(x.definition ?? '')
        : x.columns[0] === 'available_at' || /pending/.test(x.generated?.[0] ?? '')),
  )
  expect(claimIndex, `an index on (available_at, id) of live rows: ${described}`).toBeDefined()
  const dedupIndex = indexes.find(
    (x) =>
      x.unique &&
      x.columns.length === 1 &&
      covers(x, 0, 'dedup_key') &&
      (dialect !== 'sqlite' || (x.partial === true && /dedup_key IS NOT NULL/.test(x.definition ?? ''))),
  )
  expect(dedupIndex, `a unique index on dedup_key: ${described}`).toBeDefined()
}
