// Scenario 3: a relay whose lease lapsed settles late; fencing (WHERE attempts = claimed attempts)
// keeps the reclaiming relay's result, for delivered, Retry and dead-letter settles alike.
import { settleDelivered, waitFor } from '@outboxkit/conformance'
import { Cancel, type Handler, type Outbox, type Relay, type RelayEvents, Retry } from '@outboxkit/core'
import { afterAll, afterEach, describe, expect, test } from 'vitest'
import { figuresLine } from '../src/report.js'
import { gatedBackend } from './support/gated-backend.js'
import { deferred, nextEvent, type OutboxRow, tableSql, World } from './support/world.js'

const w = new World()
afterEach(() => w.cleanup())
afterAll(() => w.close())

type Outcome = 'delivered' | 'retry' | 'dead'
const outcomes: Outcome[] = ['delivered', 'retry', 'dead']

/** What the row looks like once `outcome` was settled at `attempts` (with keepDelivered). */
function expectSettled(
  row: { state: string; attempts: number } | undefined,
  outcome: Outcome,
  attempts: number,
) {
  expect(row).toBeDefined()
  expect(row!.attempts).toBe(attempts)
  expect(row!.state).toBe({ delivered: 'delivered', retry: 'pending', dead: 'dead' }[outcome])
}

function settlement(id: string, attempts: number, outcome: Outcome, by: string) {
  return outcome === 'delivered'
    ? { id, attempts, outcome }
    : outcome === 'retry'
      ? { id, attempts, outcome, delayMs: 60_000, error: `retry by ${by}` }
      : { id, attempts, outcome, error: `dead by ${by}` }
}

describe('backend level: a raw stale settle after a reclaim changes nothing', () => {
  test.each(outcomes.flatMap((stale) => outcomes.map((fresh) => [stale, fresh] as const)))(
    'stale %s, fresh %s',
    async (stale, fresh) => {
      const outbox = await w.outbox('fence_raw')
      const backend = w.backend()
      const [m] = await w.publish(outbox, [{ topic: 't', payload: {} }])
      const claim = { table: outbox.table, topics: ['t'], limit: 1, leaseMs: 60_000, maxAttempts: 10 }
      const [first] = await backend.claim(claim)
      expect(first!.attempts).toBe(1)
      // The first relay's lease lapses (as if it stalled) and a second relay reclaims.
      await w.query(`UPDATE ${tableSql(outbox)} SET available_at = now() - interval '1 ms'`)
      const [second] = await backend.claim(claim)
      expect(second!.attempts).toBe(2)
      const settle = (s: ReturnType<typeof settlement>) =>
        backend.settle({ table: outbox.table, keepDelivered: true, settlements: [s as never] })

      expect(await settle(settlement(m!.id, 1, stale, 'stale'))).toEqual([])
      const [during] = await w.rows(outbox)
      expect(during).toMatchObject({ state: 'processing', attempts: 2, last_error: null })
      expect(during!.due_in_ms).toBeGreaterThan(50_000) // the reclaiming lease is untouched
      expect(
        await backend.extendLease!({ table: outbox.table, leaseMs: 1, rows: [{ id: m!.id, attempts: 1 }] }),
      ).toEqual([])

      expect(await settle(settlement(m!.id, 2, fresh, 'fresh'))).toEqual([m!.id])
      const [after] = await w.rows(outbox)
      expectSettled(after, fresh, 2)
      // The stale settle arriving after the fresh one is refused as well.
      expect(await settle(settlement(m!.id, 1, stale, 'stale'))).toEqual([])
      const stable = ({ due_in_ms: _, ...rest }: OutboxRow) => rest
      expect((await w.rows(outbox)).map(stable)).toEqual([stable(after!)])
      if (fresh !== 'delivered') expect(after!.last_error).toBe(`${fresh} by fresh`)
    },
  )

  test('what fencing does not do: a late settle is accepted while nobody has reclaimed the row', async () => {
    const outbox = await w.outbox('fence_late')
    const backend = w.backend()
    const [m] = await w.publish(outbox, [{ topic: 't', payload: {} }])
    await backend.claim({ table: outbox.table, topics: ['t'], limit: 1, leaseMs: 60_000, maxAttempts: 10 })
    await w.query(`UPDATE ${tableSql(outbox)} SET available_at = now() - interval '1 ms'`)
    // Lease lapsed but no reclaim yet: attempts still match, so the result is kept (the work was done).
    expect(await settleDelivered(backend, outbox, { id: m!.id, attempts: 1 }, true)).toEqual([m!.id])
    expectSettled((await w.rows(outbox))[0], 'delivered', 1)
  })
})

/** A handler that ends with `outcome` and records its call. */
function handlerFor(outcome: Outcome, calls: string[], name: string): Handler {
  return async (message) => {
    calls.push(`${name}#${message.attempts}`)
    if (outcome === 'retry') throw new Retry({ delayMs: 60_000, reason: `retry by ${name}` })
    if (outcome === 'dead') throw new Cancel(`dead by ${name}`)
  }
}

const eventOf = { delivered: 'delivered', retry: 'retried', dead: 'deadLettered' } as const

function settledEvent(relay: Relay, outcome: Outcome): Promise<{ settled: boolean }> {
  return nextEvent(relay, eventOf[outcome] as keyof RelayEvents) as Promise<{ settled: boolean }>
}

describe('engine level: a relay made late (settle held past its lease) loses to the reclaiming relay', () => {
  const cases: [Outcome, Outcome][] = [
    ['delivered', 'retry'],
    ['delivered', 'dead'],
    ['retry', 'delivered'],
    ['retry', 'dead'],
    ['dead', 'delivered'],
    ['dead', 'retry'],
  ]
  test.each(cases)('late relay %s, reclaiming relay %s', async (late, fresh) => {
    const outbox: Outbox = await w.outbox('fence_engine')
    const calls: string[] = []
    const gated = gatedBackend(w.backend())
    gated.hold()
    const a = w.relay(outbox, {
      backend: gated.backend,
      handlers: { t: handlerFor(late, calls, 'A') },
      concurrency: 1,
      leaseMs: 600,
      pollIntervalMs: 100,
      keepDelivered: true,
      notify: false,
    })
    const [m] = await w.publish(outbox, [{ topic: 't', payload: {} }])
    const aSettled = settledEvent(a, late)
    await a.start()
    await gated.held // A finished its handler; its settle is held back past the lease.
    const b = w.relay(outbox, {
      handlers: { t: handlerFor(fresh, calls, 'B') },
      leaseMs: 30_000,
      pollIntervalMs: 100,
      keepDelivered: true,
      notify: false,
    })
    const bSettled = settledEvent(b, fresh)
    await b.start()
    expect((await bSettled).settled).toBe(true)
    gated.release()
    expect((await aSettled).settled).toBe(false) // fenced: A's late result was refused
    expect(gated.settles.flatMap((s) => s.applied)).toEqual([])
    const [row] = await w.rows(outbox, m!.id)
    expectSettled(row, fresh, 2)
    if (fresh !== 'delivered') expect(row!.last_error).toBe(`${fresh} by B`)
    expect(calls).toEqual(['A#1', 'B#2']) // fencing trims the damage; the handler still ran twice
  })

  test('the engine aborts a handler whose lease expires and never settles that run, even if it finishes later', async () => {
    const outbox = await w.outbox('fence_abort')
    const gated = gatedBackend(w.backend())
    const aborted = deferred<unknown>()
    const finishLate = deferred()
    const handler: Handler = async (message, { signal }) => {
      if (message.attempts > 1) return
      signal.addEventListener('abort', () => aborted.resolve(signal.reason))
      await finishLate.promise // keeps running past the lease, ignoring the abort
    }
    const a = w.relay(outbox, {
      backend: gated.backend,
      handlers: { t: handler },
      concurrency: 1,
      leaseMs: 500,
      pollIntervalMs: 100,
      keepDelivered: true,
      notify: false,
    })
    const [m] = await w.publish(outbox, [{ topic: 't', payload: {} }])
    await a.start()
    const reason = await aborted.promise
    expect(reason).toMatchObject({ code: 'RELAY_STATE' })
    expect(String((reason as Error).message)).toContain('lease expired')
    // Reclaimed (by A itself or by B, whichever claims first) and delivered at attempt 2.
    const b = w.relay(outbox, {
      handlers: { t: handler },
      pollIntervalMs: 100,
      keepDelivered: true,
      notify: false,
    })
    await b.start()
    await waitFor(async () => (await w.rows(outbox, m!.id))[0]?.state === 'delivered', {
      timeoutMs: 20_000,
      what: 'the reclaimed delivery',
    })
    finishLate.resolve()
    await a.stop({ graceMs: 5_000 }) // waits for A's handlers and settles
    const aSettled = gated.settles.flatMap((s) => s.settlements)
    expect(aSettled.filter((s) => s.attempts === 1)).toEqual([]) // the abandoned run never settled
    const [row] = await w.rows(outbox, m!.id)
    expect(row).toMatchObject({ state: 'delivered', attempts: 2 })
    console.log(figuresLine('stale-relay', { fencedCases: cases.length + 9, aSettlesSent: 0 }))
  })
})
