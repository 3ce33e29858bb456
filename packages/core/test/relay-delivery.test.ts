// The relay's delivery semantics, run on every database of the matrix (DIALECTS).
import { DIALECTS, waitFor } from '@outboxkit/conformance'
import { type DeliveredMessage, isOutboxError, OutboxError } from '@outboxkit/core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { z } from 'zod'
import { deferred, messages, nextEvent, useHarness } from './support/harness.js'

describe.each(DIALECTS)('%s', (dialect) => {
  const h = useHarness(dialect)

  describe('atomicity end to end', () => {
    let business: string
    beforeAll(async () => {
      business = `core_orders_${process.pid}`
      const idType = dialect === 'postgres' ? 'text' : 'VARCHAR(64)'
      await h.query(`CREATE TABLE IF NOT EXISTS ${business} (id ${idType} PRIMARY KEY)`)
    })
    afterAll(async () => {
      await h.query(`DROP TABLE IF EXISTS ${business}`)
    })

    test('a committed publish is delivered, a rolled-back one never is', async () => {
      const outbox = await h.outbox('atomic')
      const seen: DeliveredMessage[] = []
      const relay = h.relay(outbox, {
        handlers: { 'order.created': (m) => void seen.push(m) },
        pollIntervalMs: 100,
      })
      await relay.start()

      // Rolled back first, so its id sorts before the committed one: a claim would meet it first.
      let rolledBackId = ''
      await expect(
        h.inTransaction(async (tx) => {
          await tx.query(`INSERT INTO ${business} (id) VALUES ('o-rolled-back')`)
          rolledBackId = (await tx.publish(outbox, { topic: 'order.created', payload: { id: 'rb' } })).id
          throw new Error('business failure')
        }),
      ).rejects.toThrow('business failure')

      const delivered = nextEvent(relay, 'delivered')
      const committed = await h.inTransaction(async (tx) => {
        await tx.query(`INSERT INTO ${business} (id) VALUES ('o-committed')`)
        return tx.publish(outbox, {
          topic: 'order.created',
          payload: { id: 'ok' },
          key: 'o-committed',
          headers: { tenant: 't1' },
        })
      })
      const event = await delivered
      expect(event.message.id).toBe(committed.id)
      expect(event.message).toMatchObject({
        topic: 'order.created',
        key: 'o-committed',
        payload: { id: 'ok' },
        headers: { tenant: 't1' },
        attempts: 1,
      })
      expect(event.message.createdAt).toBeInstanceOf(Date)

      // One more full claim cycle after the delivery: the rolled-back message is nowhere.
      await nextEvent(relay, 'claimed')
      await nextEvent(relay, 'claimed')
      expect(seen.map((m) => m.id)).toEqual([committed.id])
      expect(await h.row(outbox, rolledBackId)).toBeUndefined()
      expect(await h.rows(outbox)).toEqual([])
      expect((await h.query(`SELECT id FROM ${business} ORDER BY id`)).map((r) => r.id)).toEqual([
        'o-committed',
      ])
    })
  })

  describe('claims never exceed free concurrency slots', () => {
    test('concurrency 3, 30 messages: at most 3 running, every claim within free slots, slots refill one by one', async () => {
      const outbox = await h.outbox('conc')
      let running = 0
      let maxRunning = 0
      const processingSeen: number[] = []
      const delivered = new Set<string>()
      const slow = deferred()
      let slowId: string | undefined
      const claims: { count: number; limit: number; inFlight: number }[] = []
      const relay = h.relay(outbox, {
        handlers: {
          t: async (m) => {
            running++
            maxRunning = Math.max(maxRunning, running)
            try {
              processingSeen.push(await h.count(outbox, { state: 'processing' }))
              if (slowId === undefined) {
                slowId = m.id
                await slow.promise
              }
            } finally {
              running--
            }
          },
        },
        concurrency: 3,
        // No poll and no NOTIFY can refill the slots: only handlers finishing can.
        pollIntervalMs: 60_000,
        notify: false,
      })
      relay.on('claimed', (e) => claims.push({ ...e, inFlight: relay.stats.inFlight }))
      relay.on('delivered', (e) => delivered.add(e.message.id))
      await h.publish(outbox, messages(30))
      await relay.start()

      // The slow handler holds one slot the whole time; the other two slots drain the rest.
      await waitFor(() => delivered.size === 29, {
        timeoutMs: 15_000,
        what: '29 deliveries around the slow handler',
      })
      expect(delivered.has(slowId!)).toBe(false)
      expect(running).toBe(1)
      slow.resolve()
      await waitFor(() => delivered.size === 30, { timeoutMs: 5_000, what: 'the slow delivery' })

      expect(maxRunning).toBe(3)
      expect(Math.max(...processingSeen)).toBeLessThanOrEqual(3)
      expect(claims.length).toBeGreaterThan(1)
      for (const c of claims) {
        expect(c.limit).toBeLessThanOrEqual(3 - c.inFlight)
        expect(c.count).toBeLessThanOrEqual(c.limit)
      }
      expect(await h.rows(outbox)).toEqual([])
    })
  })

  describe('topics', () => {
    test('a relay claims only the topics it has handlers for', async () => {
      const outbox = await h.outbox('topics')
      const seen: string[] = []
      const relay = h.relay(outbox, { handlers: { a: (m) => void seen.push(m.topic) }, pollIntervalMs: 100 })
      const [, other] = await h.publish(outbox, [
        { topic: 'a', payload: {} },
        { topic: 'b', payload: {} },
      ])
      const delivered = nextEvent(relay, 'delivered')
      await relay.start()
      await delivered
      await nextEvent(relay, 'claimed')
      await nextEvent(relay, 'claimed')
      expect(seen).toEqual(['a'])
      expect(relay.stats.claimed).toBe(1)
      // On the WAL transport the relay moves the message it has no handler for into the table
      // (for a relay that has one), after it read it: waited for, then the same row as the table's.
      const row = await waitFor(() => h.row(outbox, other!.id), { what: "topic b's message in the table" })
      expect(row).toMatchObject({ topic: 'b', state: 'pending', attempts: 0 })
    })
  })

  describe('two relays on one database (PostgreSQL and MySQL: SKIP LOCKED; SQLite: one writer)', () => {
    test('500 messages: each delivered exactly once, by disjoint claims', async () => {
      const outbox = await h.outbox('two')
      const calls = new Map<string, string[]>()
      const errors: unknown[] = []
      // Each relay's handlers hold until both relays have claimed something: the first relay to poll
      // cannot drain all 500 before the other's poll comes round (its slots are full), so the claims
      // are disjoint by construction, not by timing.
      const seenBy = new Set<string>()
      const bothClaimed = deferred()
      const handler = (name: string) => async (m: DeliveredMessage) => {
        calls.set(m.id, [...(calls.get(m.id) ?? []), name])
        seenBy.add(name)
        if (seenBy.size === 2) bothClaimed.resolve()
        await bothClaimed.promise
        await new Promise((r) => setImmediate(r))
      }
      const relays = (['a', 'b'] as const).map((name) => {
        const relay = h.relay(outbox, {
          handlers: { t: handler(name) },
          concurrency: 10,
          batchSize: 10,
          pollIntervalMs: 200,
        })
        relay.on('error', (e) => errors.push(e.error))
        relay.on('retried', (e) => errors.push(e.error))
        return relay
      })
      await Promise.all(relays.map((r) => r.start()))
      const published = await h.publish(outbox, messages(500))
      await waitFor(() => relays[0]!.stats.delivered + relays[1]!.stats.delivered >= 500, {
        timeoutMs: 30_000,
        what: '500 deliveries',
      })
      expect(errors).toEqual([])
      expect(calls.size).toBe(500)
      for (const p of published) expect(calls.get(p.id)).toHaveLength(1)
      const byA = [...calls.values()].filter((c) => c[0] === 'a').length
      expect(byA).toBeGreaterThan(0)
      expect(byA).toBeLessThan(500)
      expect(relays[0]!.stats.delivered).toBe(byA)
      expect(relays[1]!.stats.delivered).toBe(500 - byA)
      expect(await h.rows(outbox)).toEqual([])
    })
  })

  describe('topic schemas at delivery', () => {
    const Doubled = z.object({ n: z.number() }).transform((v) => ({ doubled: v.n * 2 }))

    test('a stored payload failing the schema is dead-lettered at once; good rows get the schema output', async () => {
      const outbox = await h.outbox('schema', { topics: { t: Doubled } })
      const seen: unknown[] = []
      const relay = h.relay(outbox, {
        handlers: { t: (m) => void seen.push(m.payload) },
        pollIntervalMs: 100,
        keepDelivered: true,
      })
      const [badId] = await h.insert(outbox, [{ topic: 't', payloadText: '{"n":"x"}' }])
      const bad = { id: badId! }
      const dead = nextEvent(relay, 'deadLettered')
      const delivered = nextEvent(relay, 'delivered')
      const [good] = await h.publish(outbox, [{ topic: 't', payload: { n: 21 } }])
      await relay.start()
      const d = await dead
      expect(d).toMatchObject({ id: bad!.id, reason: 'schema', attempts: 1, settled: true })
      await delivered
      expect(seen).toEqual([{ doubled: 42 }])
      expect(await h.row(outbox, bad!.id)).toMatchObject({ state: 'dead', attempts: 1 })
      expect((await h.row(outbox, bad!.id))!.last_error).toMatch(/does not match the schema/)
      expect(await h.row(outbox, good!.id)).toMatchObject({
        state: 'delivered',
        attempts: 1,
        payload: { n: 21 },
      })
    })

    test('publish of a bad payload or an unknown topic throws INVALID_MESSAGE and writes nothing', async () => {
      const outbox = await h.outbox('schema_pub', { topics: { t: Doubled } })
      const attempt = (msg: unknown) => h.publish(outbox, [msg as never])
      for (const msg of [
        { topic: 't', payload: { n: 'x' } },
        { topic: 'unknown', payload: { n: 1 } },
      ]) {
        const err = await attempt(msg).catch((e: unknown) => e)
        expect(err).toBeInstanceOf(OutboxError)
        expect(isOutboxError(err, 'INVALID_MESSAGE')).toBe(true)
      }
      expect(await h.rows(outbox)).toEqual([])
    })
  })

  describe('delay and dedup through the relay', () => {
    test('a delayed message stays pending through claim cycles and is delivered after its time', async () => {
      const outbox = await h.outbox('delay')
      let deliveredAt = 0
      const relay = h.relay(outbox, {
        handlers: {
          t: () => {
            deliveredAt = Date.now()
          },
        },
        pollIntervalMs: 100,
      })
      await relay.start()
      await nextEvent(relay, 'claimed')
      const publishedAt = Date.now()
      const delivered = nextEvent(relay, 'delivered')
      const [p] = await h.publish(outbox, [{ topic: 't', payload: {}, delayMs: 1_500 }])
      // Two claims that both returned after the commit: the second began after it.
      await nextEvent(relay, 'claimed')
      const cycle = await nextEvent(relay, 'claimed')
      expect(cycle.count).toBe(0)
      expect(await h.row(outbox, p!.id)).toMatchObject({ state: 'pending', attempts: 0 })
      const event = await delivered
      expect(event.message.id).toBe(p!.id)
      expect(deliveredAt - publishedAt).toBeGreaterThanOrEqual(1_500 - 20)
    })

    test('a second publish with the same dedupKey is a no-op: one row, one delivery', async () => {
      const outbox = await h.outbox('dedup')
      const seen: unknown[] = []
      const relay = h.relay(outbox, {
        handlers: { t: (m) => void seen.push(m.payload) },
        pollIntervalMs: 100,
        keepDelivered: true,
      })
      const [first] = await h.publish(outbox, [{ topic: 't', payload: { v: 1 }, dedupKey: 'k1' }])
      const [second] = await h.publish(outbox, [{ topic: 't', payload: { v: 2 }, dedupKey: 'k1' }])
      expect(first!.published).toBe(true)
      expect(second).toEqual({ id: first!.id, published: false })
      const delivered = nextEvent(relay, 'delivered')
      await relay.start()
      await delivered
      await nextEvent(relay, 'claimed')
      // keepDelivered keeps the row, so the key still blocks a third publish.
      const [third] = await h.publish(outbox, [{ topic: 't', payload: { v: 3 }, dedupKey: 'k1' }])
      expect(third!.published).toBe(false)
      await nextEvent(relay, 'claimed')
      expect(seen).toEqual([{ v: 1 }])
      expect((await h.rows(outbox)).map((r) => [r.state, r.payload])).toEqual([['delivered', { v: 1 }]])
    })
  })
})
