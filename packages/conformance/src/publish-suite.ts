import {
  createRelay,
  type DeliveredMessage,
  defineOutbox,
  isOutboxError,
  migrate,
  type Outbox,
  type OutboxBackend,
  type PublishFn,
  type PublishManyFn,
} from '@outboxkit/core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { uniqueTableName, waitFor } from './database.js'
import { type OutboxDialect, type OutboxSql, outboxSql } from './dialect-sql.js'

/** A handle `publish` must refuse, with a label for the test name. */
export interface RefusedHandle {
  label: string
  handle: unknown
}

/** What an adapter's test file gives {@link runPublishConformance}. */
export interface PublishHarness<TTx> {
  /** The adapter name as it appears in error messages: `[outboxkit] [name]`. */
  name: string
  /** A title for this run when an adapter runs the suite more than once (e.g. per driver). Default `name`. */
  label?: string
  publish: PublishFn<TTx>
  publishMany: PublishManyFn<TTx>
  /** Opens whatever the adapter needs (ORM instance, pool, ...). Called once. */
  setup(): Promise<PublishContext<TTx>>
}

/** The library-specific operations the suite drives. */
export interface PublishContext<TTx> {
  /** The database's SQL dialect: how the suite writes its raw SQL. Default `'postgres'`. */
  dialect?: OutboxDialect
  /** Backend used to migrate the table and run a relay for delivery checks. */
  backend: OutboxBackend
  /**
   * Raw SQL on a separate connection (PGlite: the same instance, outside any transaction), written
   * for {@link PublishContext.dialect} with its own placeholders (`$1` PostgreSQL, `?` MySQL and
   * SQLite); returns plain rows.
   */
  inspect(text: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  /** Runs `fn` in a transaction through the library's own API: commit on resolve, rollback on throw. */
  transaction<T>(fn: (tx: TTx) => Promise<T>): Promise<T>
  /** A nested transaction (savepoint) inside `tx`: commit on resolve, roll back to the savepoint on throw. */
  savepoint?: <T>(tx: TTx, fn: (tx: TTx) => Promise<T>) => Promise<T>
  /** Handles that are not open transactions: pool / root db / autocommit connection / client... */
  refusedHandles(): Promise<RefusedHandle[]>
  /**
   * Escaped handles (kept after their transaction ended) that the adapter cannot recognise as
   * ended, with the reason; the suite then skips those checks and the docs must say so.
   */
  undetectableEscapes?: { afterCommit?: string; afterRollback?: string }
  /** Extra concurrency the library allows for the concurrent-publish test. Default 20. */
  concurrentTransactions?: number
  teardown(): Promise<void>
}

class Rollback extends Error {}

/**
 * The publish conformance suite: every adapter runs it from one small test file. It asserts
 * through raw SQL on a separate connection, never through the adapter under test.
 */
export function runPublishConformance<TTx>(harness: PublishHarness<TTx>): void {
  const { name, publish, publishMany } = harness
  describe(`publish conformance: ${harness.label ?? name}`, () => {
    let ctx: PublishContext<TTx>
    let sql: OutboxSql
    let outbox: Outbox
    let table: string
    const count = (filter: { id?: string; topic?: string } = {}) => sql.count(table, filter)
    const rowOf = (id: string) => sql.row(table, id)
    const expectCode = async (promise: Promise<unknown>, code: string) => {
      const err = await promise.then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(err, `expected OutboxError ${code}`).toBeDefined()
      expect(isOutboxError(err), String(err)).toBe(true)
      expect((err as { code: string }).code).toBe(code)
      return err as Error
    }

    beforeAll(async () => {
      ctx = await harness.setup()
      sql = outboxSql(ctx.dialect ?? 'postgres', (text, params) => ctx.inspect(text, params))
      table = uniqueTableName(name)
      outbox = defineOutbox({ table })
      await migrate(outbox, ctx.backend)
    })
    afterAll(async () => {
      await sql?.drop(table).catch(() => {})
      await ctx?.teardown()
    })

    test('a committed publish writes one pending row with every column', async () => {
      const payload = { orderId: 'o-1', total: 12.5, items: [1, 2], nested: { ok: true } }
      const result = await ctx.transaction((tx) =>
        publish(outbox, tx, {
          topic: 'order.created',
          payload,
          key: 'o-1',
          headers: { tenant: 't1' },
          dedupKey: 'commit-1',
        }),
      )
      expect(result.published).toBe(true)
      expect(result.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      const row = await rowOf(result.id)
      expect(row).toBeDefined()
      expect(row!.topic).toBe('order.created')
      expect(row!.key).toBe('o-1')
      expect(JSON.parse(row!.payload_text as string)).toEqual(payload)
      expect(row!.state).toBe('pending')
      expect(Number(row!.attempts)).toBe(0)
      expect(row!.dedup_key).toBe('commit-1')
      expect(row!.last_error).toBeNull()
      expect(JSON.parse(row!.headers_text)).toEqual({ tenant: 't1' })
    })

    test('a rolled-back publish leaves nothing', async () => {
      let id = ''
      await expect(
        ctx.transaction(async (tx) => {
          id = (await publish(outbox, tx, { topic: 'order.created', payload: { n: 1 } })).id
          throw new Rollback('roll back')
        }),
      ).rejects.toThrow('roll back')
      expect(id).not.toBe('')
      expect(await count({ id })).toBe(0)
    })

    test('refuses every handle that is not an open transaction, and writes nothing', async () => {
      const handles = await ctx.refusedHandles()
      expect(handles.length).toBeGreaterThan(0)
      for (const { label, handle } of handles) {
        const before = await count()
        const err = await expectCode(
          publish(outbox, handle as TTx, { topic: 'refused', payload: { label } }),
          'NOT_IN_TRANSACTION',
        )
        expect(err.message, label).toContain(`[outboxkit] [${name}]`)
        await expectCode(
          publishMany(outbox, handle as TTx, [{ topic: 'refused', payload: { label } }]),
          'NOT_IN_TRANSACTION',
        )
        expect(await count(), `${label} wrote a row`).toBe(before)
      }
      expect(await count({ topic: 'refused' })).toBe(0)
    })

    test('refuses a transaction handle used after its transaction committed', async (t) => {
      if (ctx.undetectableEscapes?.afterCommit) t.skip()
      let escaped: TTx | undefined
      await ctx.transaction(async (tx) => {
        escaped = tx
      })
      await expectCode(
        publish(outbox, escaped as TTx, { topic: 'escaped', payload: 1 }),
        'NOT_IN_TRANSACTION',
      )
      await expectCode(
        publishMany(outbox, escaped as TTx, [{ topic: 'escaped', payload: 1 }]),
        'NOT_IN_TRANSACTION',
      )
      expect(await count({ topic: 'escaped' })).toBe(0)
    })

    test('refuses a transaction handle used after its transaction rolled back', async (t) => {
      if (ctx.undetectableEscapes?.afterRollback) t.skip()
      let escaped: TTx | undefined
      await ctx
        .transaction(async (tx) => {
          escaped = tx
          throw new Rollback('roll back')
        })
        .catch((e) => {
          if (!(e instanceof Rollback)) throw e
        })
      await expectCode(
        publish(outbox, escaped as TTx, { topic: 'escaped-rb', payload: 1 }),
        'NOT_IN_TRANSACTION',
      )
      expect(await count({ topic: 'escaped-rb' })).toBe(0)
    })

    test('rolling back a savepoint removes its messages; the outer commit keeps the rest', async (t) => {
      if (!ctx.savepoint) t.skip()
      const savepoint = ctx.savepoint!
      const ids = await ctx.transaction(async (tx) => {
        const outer = await publish(outbox, tx, { topic: 'sp', payload: 'outer' })
        let inner = ''
        await savepoint(tx, async (stx) => {
          inner = (await publish(outbox, stx, { topic: 'sp', payload: 'inner' })).id
          throw new Rollback('savepoint')
        }).catch((e) => {
          if (!(e instanceof Rollback)) throw e
        })
        const kept = await savepoint(tx, (stx) => publish(outbox, stx, { topic: 'sp', payload: 'kept' }))
        return { outer: outer.id, inner, kept: kept.id }
      })
      expect(await count({ id: ids.outer })).toBe(1)
      expect(await count({ id: ids.inner })).toBe(0)
      expect(await count({ id: ids.kept })).toBe(1)
    })

    test('publishMany writes all messages in order, in one statement', async () => {
      const msgs = Array.from({ length: 7 }, (_, i) => ({ topic: 'many', payload: { i }, key: `k${i}` }))
      const results = await ctx.transaction((tx) => publishMany(outbox, tx, msgs))
      expect(results).toHaveLength(7)
      expect(results.every((r) => r.published)).toBe(true)
      const sorted = [...results.map((r) => r.id)].sort()
      expect(results.map((r) => r.id)).toEqual(sorted)
      const rows = await sql.rows(table, { topic: 'many' })
      expect(rows.map((r) => Number(JSON.parse(r.payload_text).i))).toEqual([0, 1, 2, 3, 4, 5, 6])
      expect(rows.map((r) => r.key)).toEqual(msgs.map((m) => m.key))
      expect(rows.map((r) => r.id)).toEqual(results.map((r) => r.id))
      expect(await ctx.transaction((tx) => publishMany(outbox, tx, []))).toEqual([])
    })

    test('publishMany is all or nothing: one invalid message writes none', async () => {
      const msgs = [
        { topic: 'atomic', payload: 1 },
        { topic: 'atomic', payload: { bad: 10n } },
        { topic: 'atomic', payload: 3 },
      ]
      await expect(ctx.transaction((tx) => publishMany(outbox, tx, msgs as never))).rejects.toMatchObject({
        code: 'INVALID_MESSAGE',
      })
      expect(await count({ topic: 'atomic' })).toBe(0)
    })

    test('dedupKey: a second publish with the same key is a no-op returning the first id', async () => {
      const first = await ctx.transaction((tx) =>
        publish(outbox, tx, { topic: 'dedup', payload: 1, dedupKey: 'dd-1' }),
      )
      const second = await ctx.transaction((tx) =>
        publish(outbox, tx, { topic: 'dedup', payload: 2, dedupKey: 'dd-1' }),
      )
      expect(first.published).toBe(true)
      expect(second).toEqual({ id: first.id, published: false })
      const batch = await ctx.transaction((tx) =>
        publishMany(outbox, tx, [
          { topic: 'dedup', payload: 3, dedupKey: 'dd-2' },
          { topic: 'dedup', payload: 4, dedupKey: 'dd-1' },
          { topic: 'dedup', payload: 5, dedupKey: 'dd-2' },
        ]),
      )
      expect(batch.map((r) => r.published)).toEqual([true, false, false])
      expect(batch[1]!.id).toBe(first.id)
      expect(batch[2]!.id).toBe(batch[0]!.id)
      expect(await count({ topic: 'dedup' })).toBe(2)
    })

    test('delayMs: available_at is delayMs after now() of the database', async () => {
      const { id } = await ctx.transaction((tx) =>
        publish(outbox, tx, { topic: 'delay', payload: 1, delayMs: 60_000 }),
      )
      const r = await rowOf(id)
      expect(r!.delay_ms).toBeGreaterThanOrEqual(59_900)
      expect(r!.delay_ms).toBeLessThanOrEqual(60_100)
    })

    test('unicode and a 1 MiB payload round-trip exactly', async () => {
      const text = 'héllo wörld ✓ 日本語 🚀 \\ " \' \n\t'
      const big = { blob: 'x'.repeat(1024 * 1024), text }
      const a = await ctx.transaction((tx) =>
        publish(outbox, tx, { topic: 'big', payload: big, key: 'ключ-🔑', headers: { 'x-note': text } }),
      )
      const row = await rowOf(a.id)
      expect(JSON.parse(row!.payload_text as string)).toEqual(big)
      expect(row!.key).toBe('ключ-🔑')
      expect(JSON.parse(row!.headers_text)['x-note']).toBe(text)
      const s = await ctx.transaction((tx) => publish(outbox, tx, { topic: 'big', payload: 'just a string' }))
      expect(JSON.parse((await rowOf(s.id))!.payload_text as string)).toBe('just a string')
    })

    test('payloads that are not JSON are refused with INVALID_MESSAGE and nothing is written', async () => {
      const cyclic: Record<string, unknown> = { a: 1 }
      cyclic.self = cyclic
      for (const payload of [
        10n,
        { n: 1n },
        cyclic,
        () => 1,
        { f: () => 1 },
        Number.NaN,
        undefined,
        new Map([[1, 2]]),
      ]) {
        await expectCode(
          ctx.transaction((tx) => publish(outbox, tx, { topic: 'nonjson', payload })),
          'INVALID_MESSAGE',
        )
      }
      await expectCode(
        ctx.transaction((tx) => publish(outbox, tx, { topic: '', payload: 1 })),
        'INVALID_MESSAGE',
      )
      await expectCode(
        ctx.transaction((tx) =>
          publish(outbox, tx, { topic: 'nonjson', payload: 1, headers: { a: 1 as unknown as string } }),
        ),
        'INVALID_MESSAGE',
      )
      await expectCode(
        ctx.transaction((tx) => publish(outbox, tx, { topic: 'nonjson', payload: 1, delayMs: -1 })),
        'INVALID_MESSAGE',
      )
      expect(await count({ topic: 'nonjson' })).toBe(0)
    })

    test('bad input is refused before any statement: nothing is written and the transaction stays usable', async () => {
      const cut = '🚀'.slice(0, 1) // a lone surrogate: a string cut in the middle of an emoji
      const rows: [label: string, message: Record<string, unknown>, says: string][] = [
        [
          'an unknown field (delay for delayMs)',
          { topic: 'bad-input', payload: 1, delay: 60_000 },
          '"delayMs"',
        ],
        ['a key that is not a string', { topic: 'bad-input', payload: 1, key: 42 }, 'key must be a string'],
        [
          'a lone surrogate in a nested payload value',
          { topic: 'bad-input', payload: { a: [{ b: cut }] } },
          'payload.a[0].b',
        ],
        [
          'a lone surrogate in a payload key',
          { topic: 'bad-input', payload: { [`k${cut}`]: 1 } },
          'a key of payload',
        ],
        [
          'a lone surrogate in a header',
          { topic: 'bad-input', payload: 1, headers: { h: cut } },
          'headers["h"]',
        ],
        ['a lone surrogate in the key', { topic: 'bad-input', payload: 1, key: `k${cut}` }, 'key contains'],
        ['a lone surrogate in the topic', { topic: `bad-input${cut}`, payload: 1 }, 'topic contains'],
        [
          'a lone surrogate in the dedupKey',
          { topic: 'bad-input', payload: 1, dedupKey: cut },
          'dedupKey contains',
        ],
      ]
      // A synchronous driver (better-sqlite3) throws these synchronously, inside the transaction.
      const attempt = (fn: () => Promise<unknown>) => {
        try {
          return fn()
        } catch (err) {
          return Promise.reject(err)
        }
      }
      const before = await count()
      const good = await ctx.transaction(async (tx) => {
        for (const [label, message, says] of rows) {
          const one = await expectCode(
            attempt(() => publish(outbox, tx, message as never)),
            'INVALID_MESSAGE',
          )
          expect(one.message, label).toContain(`[outboxkit] [${name}]`)
          expect(one.message, label).toContain(says)
          const many = await expectCode(
            attempt(() =>
              publishMany(outbox, tx, [{ topic: 'bad-input', payload: 'first' }, message] as never),
            ),
            'INVALID_MESSAGE',
          )
          expect(many.message, label).toContain('message #1')
        }
        // The refusals sent nothing, so the transaction is still open and usable: this publish
        // commits with it (a statement that had failed on PostgreSQL would have aborted it).
        return publish(outbox, tx, { topic: 'bad-input', payload: 'after the refusals' })
      })
      expect(good.published).toBe(true)
      expect(await count({ id: good.id })).toBe(1)
      expect(await count({ topic: 'bad-input' })).toBe(1)
      expect(await count()).toBe(before + 1)
    })

    test('many concurrent transactions each publish exactly once', async () => {
      const n = ctx.concurrentTransactions ?? 20
      const results = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          ctx.transaction((tx) => publish(outbox, tx, { topic: 'concurrent', payload: { i } })),
        ),
      )
      expect(new Set(results.map((r) => r.id)).size).toBe(n)
      expect(await count({ topic: 'concurrent' })).toBe(n)
    })

    test('a relay delivers committed messages with payload, key and headers intact, never rolled-back ones', async () => {
      const deliveries: DeliveredMessage[] = []
      const committed = await ctx.transaction((tx) =>
        publishMany(outbox, tx, [
          { topic: 'e2e', payload: { n: 1, s: 'ü' }, key: 'agg-1', headers: { a: 'b' } },
          { topic: 'e2e', payload: [1, 'two'] },
        ]),
      )
      await ctx
        .transaction(async (tx) => {
          await publish(outbox, tx, { topic: 'e2e', payload: 'rolled back' })
          throw new Rollback('no')
        })
        .catch(() => {})
      const relay = createRelay(outbox, {
        backend: ctx.backend,
        pollIntervalMs: 50,
        handlers: { e2e: async (m: DeliveredMessage) => void deliveries.push(m) },
      })
      await relay.start()
      try {
        await waitFor(() => deliveries.length >= 2, { what: 'two deliveries' })
        // The relay keeps polling: if the rolled-back message existed it would be claimed now.
        await waitFor(async () => (await count({ topic: 'e2e' })) === 0, {
          what: 'the e2e rows to be deleted',
        })
      } finally {
        await relay.stop()
      }
      expect(deliveries.map((d) => d.id).sort()).toEqual(committed.map((c) => c.id).sort())
      const first = deliveries.find((d) => d.id === committed[0]!.id)!
      expect(first.payload).toEqual({ n: 1, s: 'ü' })
      expect(first.key).toBe('agg-1')
      expect(first.headers).toEqual({ a: 'b' })
      expect(first.attempts).toBe(1)
      expect(first.createdAt).toBeInstanceOf(Date)
      expect(deliveries.some((d) => d.payload === 'rolled back')).toBe(false)
    })
  })
}
