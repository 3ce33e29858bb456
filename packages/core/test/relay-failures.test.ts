// Failures, leases, fencing and backoff, run on every database of the matrix (DIALECTS).
import { DIALECTS, TRANSPORT, waitFor } from '@outboxkit/conformance'
import { Cancel, type DeliveredMessage, isOutboxError, migrate, Retry } from '@outboxkit/core'
import { describe, expect, test } from 'vitest'
import { deferred, nextEvent, observeFor, useHarness, wrapBackend } from './support/harness.js'

/** A promise that never settles: a handler that hangs, or whose process died. */
const never = () => new Promise<never>(() => {})

describe.each(DIALECTS)('%s', (dialect) => {
  const h = useHarness(dialect)

  /** The database clock read now, in epoch ms (PostgreSQL: `clock_timestamp()`). */
  const dbNow = () => h.nowMs()

  describe('lease lapse and reclaim', () => {
    test('a relay stopped without settling leaves the row; after the lease another relay delivers it with attempts 2', async () => {
      const outbox = await h.outbox('lease')
      const called = deferred<AbortSignal>()
      const a = h.relay(outbox, {
        handlers: {
          t: (_m, { signal }) => {
            called.resolve(signal)
            return never()
          },
        },
        leaseMs: 2_000,
        pollIntervalMs: 60_000,
        notify: false,
      })
      const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
      await a.start()
      const signal = await called.promise
      await a.stop({ graceMs: 0 })
      expect(signal.aborted).toBe(true)
      const left = await h.row(outbox, p!.id)
      // The table leaves the row claimed until its lease ends; a slot message has no lease: the
      // stop gives it up as a failed attempt, pending in the table with its backoff (docs/wal.md).
      expect(left).toMatchObject({ state: TRANSPORT === 'wal' ? 'pending' : 'processing', attempts: 1 })
      expect(left!.due_in_ms).toBeGreaterThan(0)

      const b = h.relay(outbox, {
        handlers: { t: () => {} },
        pollIntervalMs: 50,
        keepDelivered: true,
        notify: false,
      })
      const delivered = nextEvent(b, 'delivered')
      await b.start()
      const event = await delivered
      expect(event.message).toMatchObject({ id: p!.id, attempts: 2 })
      expect(await h.row(outbox, p!.id)).toMatchObject({ state: 'delivered', attempts: 2 })
    })

    test('a backend-level claim that is never settled is reclaimed after its lease', async () => {
      const outbox = await h.outbox('lease_be')
      const backend = h.backend()
      const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
      const claimed = await backend.claim({
        table: outbox.table,
        topics: ['t'],
        limit: 10,
        leaseMs: 300,
        maxAttempts: 10,
      })
      expect(claimed.map((r) => r.id)).toEqual([p!.id])
      const relay = h.relay(outbox, { handlers: { t: () => {} }, pollIntervalMs: 50, notify: false })
      const delivered = nextEvent(relay, 'delivered')
      await relay.start()
      expect((await delivered).message).toMatchObject({ id: p!.id, attempts: 2 })
      expect(await h.row(outbox, p!.id)).toBeUndefined()
    })
  })

  describe('attempts at claim, dead-letter at claim', () => {
    test('a handler that never settles, maxAttempts 3: dead at claim with attempts 3 after 3 handler calls', async () => {
      const outbox = await h.outbox('crash')
      const attempts: number[] = []
      const relay = h.relay(outbox, {
        handlers: {
          t: (m) => {
            attempts.push(m.attempts)
            return never() // a crash: the handler never settles
          },
        },
        leaseMs: 250,
        heartbeatMs: false, // a hung handler on a live relay stands in for a crash: no lease extension
        maxAttempts: 3,
        pollIntervalMs: 50,
        notify: false,
      })
      const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
      const dead = nextEvent(relay, 'deadLettered')
      await relay.start()
      expect(await dead).toMatchObject({ id: p!.id, attempts: 3, reason: 'max-attempts', settled: true })
      expect(attempts).toEqual([1, 2, 3])
      const row = await h.row(outbox, p!.id)
      expect(row).toMatchObject({ state: 'dead', attempts: 3 })
      expect(row!.last_error).toMatch(/lease expired after attempt 3 of 3/)
    })

    test('a handler failing every attempt: dead with attempts = maxAttempts, as many calls, last_error = the message', async () => {
      const outbox = await h.outbox('fail')
      const attempts: number[] = []
      const relay = h.relay(outbox, {
        handlers: {
          t: (m) => {
            attempts.push(m.attempts)
            throw new Error(`boom on attempt ${m.attempts}`)
          },
        },
        maxAttempts: 3,
        retry: { baseMs: 10, maxMs: 20 },
        pollIntervalMs: 60_000,
        notify: false,
      })
      const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
      const dead = nextEvent(relay, 'deadLettered')
      await relay.start()
      expect(await dead).toMatchObject({
        id: p!.id,
        attempts: 3,
        reason: 'max-attempts',
        error: 'boom on attempt 3',
      })
      expect(attempts).toEqual([1, 2, 3])
      expect(await h.row(outbox, p!.id)).toMatchObject({
        state: 'dead',
        attempts: 3,
        last_error: 'boom on attempt 3',
      })
      expect(relay.stats).toMatchObject({ retried: 2, deadLettered: 1, delivered: 0 })
    })
  })

  describe('fencing of a stale outcome through the relay', () => {
    const lateOutcomes = {
      success: () => undefined,
      Retry: () => {
        throw new Retry({ delayMs: 0 })
      },
      failure: () => {
        throw new Error('late failure')
      },
    }

    for (const [variant, late] of Object.entries(lateOutcomes)) {
      for (const keepDelivered of [true, false]) {
        test(`A's late ${variant} after B reclaimed changes nothing (B ${keepDelivered ? 'keeps' : 'deletes'} the row)`, async () => {
          const outbox = await h.outbox('fence')
          const aCalled = deferred<AbortSignal>()
          const aRelease = deferred()
          const aFinished = deferred()
          const a = wrapBackend(h.backend())
          const relayA = h.relay(outbox, {
            backend: a.backend,
            handlers: {
              t: async (_m, { signal }) => {
                aCalled.resolve(signal)
                try {
                  await aRelease.promise
                  return late()
                } finally {
                  aFinished.resolve()
                }
              },
            },
            leaseMs: 300,
            heartbeatMs: false, // A goes stale: its lease must lapse while its handler runs
            concurrency: 5,
            pollIntervalMs: 60_000,
            notify: false,
          })
          const bCalled = deferred<DeliveredMessage>()
          const bRelease = deferred()
          const relayB = h.relay(outbox, {
            handlers: {
              t: async (m) => {
                bCalled.resolve(m)
                await bRelease.promise
              },
            },
            pollIntervalMs: 50,
            keepDelivered,
            notify: false,
          })
          const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
          await relayA.start()
          const signal = await aCalled.promise
          await relayB.start()

          // A's lease expires while its handler runs: the engine aborts it; B reclaims.
          await waitFor(() => signal.aborted, {
            timeoutMs: 5_000,
            what: "A's signal to abort at lease expiry",
          })
          const bMessage = await bCalled.promise
          expect(bMessage.attempts).toBe(2)

          // A's handler now ends with its late outcome, while B still holds the row.
          aRelease.resolve()
          await aFinished.promise
          await relayA.stop({ graceMs: 1_000 })
          expect(a.calls.settlements.filter((s) => s.id === p!.id)).toEqual([])
          // Even written straight to the database, A's stale outcome is fenced by attempts.
          const stale = await h.backend().settle({
            table: outbox.table,
            keepDelivered: false,
            settlements: [
              { id: p!.id, attempts: 1, outcome: 'delivered' },
              { id: p!.id, attempts: 1, outcome: 'retry', delayMs: 0, error: 'stale' },
            ],
          })
          expect(stale).toEqual([])
          const during = await h.row(outbox, p!.id)
          expect(during).toMatchObject({ state: 'processing', attempts: 2, last_error: null })
          expect(during!.due_in_ms).toBeGreaterThan(20_000)

          const delivered = nextEvent(relayB, 'delivered')
          bRelease.resolve()
          expect((await delivered).settled).toBe(true)
          const after = await h.row(outbox, p!.id)
          if (keepDelivered)
            expect(after).toMatchObject({ state: 'delivered', attempts: 2, last_error: null })
          else expect(after).toBeUndefined()
        })
      }
    }
  })

  describe('handler outcomes', () => {
    test('Retry({ delayMs }) reschedules with that delay and counts an attempt', async () => {
      const outbox = await h.outbox('retry')
      let before = 0
      const relay = h.relay(outbox, {
        handlers: {
          t: async () => {
            before = await dbNow()
            throw new Retry({ delayMs: 5_000 })
          },
        },
        pollIntervalMs: 60_000,
        notify: false,
      })
      const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
      const retried = nextEvent(relay, 'retried')
      await relay.start()
      const e = await retried
      const after = await dbNow()
      expect(e).toMatchObject({ delayMs: 5_000, settled: true })
      expect(e.error).toBeInstanceOf(Retry)
      const row = await h.row(outbox, p!.id)
      expect(row).toMatchObject({ state: 'pending', attempts: 1, last_error: 'retry requested in 5000 ms' })
      const at = row!.available_at.getTime()
      expect(at).toBeGreaterThanOrEqual(Math.floor(before) + 5_000 - 1)
      expect(at).toBeLessThanOrEqual(Math.ceil(after) + 5_000 + 1)
    })

    test('Retry on the final attempt dead-letters', async () => {
      const outbox = await h.outbox('retry_last')
      let calls = 0
      const relay = h.relay(outbox, {
        handlers: {
          t: () => {
            calls++
            throw new Retry({ delayMs: 0, reason: 'not yet' })
          },
        },
        maxAttempts: 2,
        pollIntervalMs: 60_000,
        notify: false,
      })
      const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
      const dead = nextEvent(relay, 'deadLettered')
      await relay.start()
      expect(await dead).toMatchObject({ reason: 'max-attempts', attempts: 2 })
      expect(calls).toBe(2)
      const row = await h.row(outbox, p!.id)
      expect(row).toMatchObject({ state: 'dead', attempts: 2 })
      expect(row!.last_error).toMatch(/final attempt.*not yet/)
    })

    test("Cancel('why') dead-letters at once with last_error 'why'", async () => {
      const outbox = await h.outbox('cancel')
      let calls = 0
      const relay = h.relay(outbox, {
        handlers: {
          t: () => {
            calls++
            throw new Cancel('why')
          },
        },
        maxAttempts: 10,
        pollIntervalMs: 60_000,
        notify: false,
      })
      const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
      const dead = nextEvent(relay, 'deadLettered')
      await relay.start()
      expect(await dead).toMatchObject({ reason: 'cancel', attempts: 1, error: 'why' })
      expect(calls).toBe(1)
      expect(await h.row(outbox, p!.id)).toMatchObject({ state: 'dead', attempts: 1, last_error: 'why' })
    })

    test('a thrown non-Error is recorded readably in last_error', async () => {
      const outbox = await h.outbox('nonerror')
      const thrown: Record<string, unknown> = {
        string: 'plain string',
        object: { code: 42, why: 'no' },
        undefined: undefined,
        null: null,
        number: 7,
        emptyError: new TypeError(''),
      }
      const relay = h.relay(outbox, {
        handlers: {
          t: (m) => {
            throw thrown[(m.payload as { kind: string }).kind]
          },
        },
        retry: { baseMs: 60_000, maxMs: 60_000 },
        pollIntervalMs: 60_000,
        notify: false,
      })
      const published = await h.publish(
        outbox,
        Object.keys(thrown).map((kind) => ({ topic: 't', payload: { kind } })),
      )
      await relay.start()
      await waitFor(() => relay.stats.retried === published.length, { what: 'every handler to fail once' })
      const errors = Object.fromEntries(
        (await h.rows(outbox)).map((r) => [(r.payload as { kind: string }).kind, r.last_error]),
      )
      expect(errors).toEqual({
        string: 'plain string',
        object: 'non-Error thrown: {"code":42,"why":"no"}',
        undefined: 'non-Error thrown: undefined',
        null: 'non-Error thrown: null',
        number: 'non-Error thrown: 7',
        emptyError: 'TypeError',
      })
    })
  })

  describe('backoff written by the relay', () => {
    test('after a failure, available_at = settle time + the backoff delay, within [now, now + d]', async () => {
      const outbox = await h.outbox('backoff')
      const d = 60_000
      for (const jitter of [0, 1]) {
        let before = 0
        const relay = h.relay(outbox, {
          handlers: {
            t: async () => {
              before = await dbNow()
              throw new Error('fail')
            },
          },
          retry: { baseMs: d, maxMs: d * 10, jitter },
          pollIntervalMs: 60_000,
          notify: false,
        })
        const [p] = await h.publish(outbox, [{ topic: 't', payload: { jitter } }])
        const retried = nextEvent(relay, 'retried')
        await relay.start()
        const e = await retried
        const after = await dbNow()
        if (jitter === 0) expect(e.delayMs).toBe(d)
        expect(e.delayMs).toBeGreaterThanOrEqual(0)
        expect(e.delayMs).toBeLessThanOrEqual(d)
        const at = (await h.row(outbox, p!.id))!.available_at.getTime()
        expect(at).toBeGreaterThanOrEqual(Math.floor(before) + e.delayMs - 1)
        expect(at).toBeLessThanOrEqual(Math.ceil(after) + e.delayMs + 1)
        expect(at).toBeLessThanOrEqual(Math.ceil(after) + d + 1)
        await relay.stop({ graceMs: 0 })
      }
    })
  })

  describe('claim failures back off', () => {
    test('a relay whose claims fail (table missing) backs off instead of hammering, then recovers on its own', async () => {
      const outbox = await h.outbox('missing', { migrate: false })
      const { backend, calls } = wrapBackend(h.backend())
      const relay = h.relay(outbox, { backend, handlers: { t: () => {} }, pollIntervalMs: 10, notify: false })
      const errors: unknown[] = []
      relay.on('error', (e) => e.during === 'claim' && errors.push(e.error))
      await relay.start()
      await observeFor(1_000)
      // With a 10 ms poll and no backoff this would be ~100; the backoff schedule allows ~5.
      expect(calls.claim).toBeGreaterThanOrEqual(2)
      expect(calls.claim).toBeLessThan(15)
      expect(errors.length).toBeGreaterThanOrEqual(calls.claim - 1) // one claim may still be in flight
      // On the WAL transport the missing slot is reported too, as WAL_UNAVAILABLE naming migrate.
      const expected = (e: unknown) =>
        isOutboxError(e, 'DATABASE') || (TRANSPORT === 'wal' && isOutboxError(e, 'WAL_UNAVAILABLE'))
      expect(errors.every(expected)).toBe(true)
      expect(relay.running).toBe(true)

      await migrate(outbox, backend)
      const delivered = nextEvent(relay, 'delivered', { timeoutMs: 15_000 })
      await h.publish(outbox, [{ topic: 't', payload: {} }])
      await delivered
    })
  })
})
