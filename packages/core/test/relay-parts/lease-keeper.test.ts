import { describe, expect, test, vi } from 'vitest'
import { type InFlight, SlotTable } from '../../src/relay/in-flight.js'
import { LeaseKeeper, type LeaseKeeperDeps } from '../../src/relay/lease-keeper.js'
import { claimedRow, useFakeTimersPerTest } from './support/parts.js'

const row = claimedRow

function harness(settings: { leaseMs?: number; heartbeatMs?: number | false; maxHandlerMs?: number } = {}) {
  const slots = new SlotTable(10, 0)
  const lapsed: { id: string; why: string }[] = []
  const failed: number[] = []
  const extendCalls: string[][] = []
  let answer: (ids: string[]) => Promise<readonly string[]> = async (ids) => ids
  const deps: LeaseKeeperDeps = {
    extend: (rows) => {
      const ids = rows.map((r) => r.id)
      extendCalls.push(ids)
      return answer(ids)
    },
    running: () => slots.running(),
    onLapse: (entry, why) => {
      lapsed.push({ id: entry.row.id, why })
      slots.release(entry)
    },
    onExtendFailed: (_e, n) => failed.push(n),
  }
  const leases = new LeaseKeeper(deps, { leaseMs: 300, heartbeatMs: 100, maxHandlerMs: 10_000, ...settings })
  const claim = (...ids: string[]): InFlight[] => {
    const until = Date.now() + (settings.leaseMs ?? 300)
    const entries = ids.map((id) => slots.take(row(id), until))
    leases.watchClaim(entries, until)
    return entries
  }
  return { slots, leases, claim, lapsed, failed, extendCalls, setAnswer: (f: typeof answer) => (answer = f) }
}

useFakeTimersPerTest()

describe('LeaseKeeper', () => {
  test('without the heartbeat, a claim lapses as one: its running handlers, not its settled ones', async () => {
    const h = harness({ heartbeatMs: false })
    const [a, b] = h.claim('a', 'b')
    h.slots.toSettling(a!)
    h.leases.unwatch(a!)
    await vi.advanceTimersByTimeAsync(299)
    expect(h.lapsed).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(h.lapsed.map((l) => l.id)).toEqual(['b'])
    expect(h.lapsed[0]!.why).toMatch(/lease expired while the handler was still running/)
    expect(b!.phase).toBe('done')
  })

  test('a claim whose rows all finished leaves no timer behind', () => {
    const h = harness({ heartbeatMs: false })
    const entries = h.claim('a', 'b')
    for (const e of entries) h.leases.unwatch(e)
    expect(vi.getTimerCount()).toBe(0)
  })

  test('the heartbeat extends, in one statement, the leases of running handlers, and they do not lapse', async () => {
    const h = harness()
    h.leases.start()
    h.claim('a', 'b')
    await vi.advanceTimersByTimeAsync(1_000)
    expect(h.lapsed).toEqual([])
    expect(h.extendCalls.length).toBeGreaterThan(3)
    expect(h.extendCalls.every((ids) => ids.join() === 'a,b')).toBe(true)
    h.leases.stop()
  })

  test('a message the extension did not apply to (claimed again meanwhile) is abandoned at once', async () => {
    const h = harness()
    h.setAnswer(async (ids) => ids.filter((id) => id !== 'b'))
    h.leases.start()
    h.claim('a', 'b')
    await vi.advanceTimersByTimeAsync(100)
    expect(h.lapsed).toEqual([{ id: 'b', why: expect.stringMatching(/could not be extended/) }])
    h.leases.stop()
  })

  test('failing extensions are reported, and the lease timer still aborts at the real lapse', async () => {
    const h = harness()
    h.setAnswer(async () => {
      throw new Error('database down')
    })
    h.leases.start()
    h.claim('a')
    await vi.advanceTimersByTimeAsync(299)
    expect(h.failed.length).toBeGreaterThan(0)
    expect(h.lapsed).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(h.lapsed.map((l) => l.id)).toEqual(['a'])
    h.leases.stop()
  })

  test('past maxHandlerMs a lease is no longer extended and lapses with that reason', async () => {
    const h = harness({ maxHandlerMs: 250 })
    h.leases.start()
    h.claim('a')
    await vi.advanceTimersByTimeAsync(1_000)
    expect(h.lapsed).toEqual([{ id: 'a', why: expect.stringMatching(/ran past maxHandlerMs \(250 ms\)/) }])
    h.leases.stop()
  })

  test('a deadline watched with its own reason lapses with that reason, whatever the clock says', async () => {
    const h = harness({ heartbeatMs: false })
    const entry = h.slots.take(row('a'), Number.POSITIVE_INFINITY)
    // As a timer firing a millisecond early would see it: the run time is short of the deadline.
    entry.startedAt = Date.now() + 1
    h.leases.watchClaim([entry], Date.now() + 300, 'the handler ran past maxHandlerMs (300 ms)')
    await vi.advanceTimersByTimeAsync(300)
    expect(h.lapsed).toEqual([{ id: 'a', why: 'the handler ran past maxHandlerMs (300 ms)' }])
  })

  test('stop ends the heartbeat', async () => {
    const h = harness()
    h.leases.start()
    h.leases.stop()
    h.claim('a')
    await vi.advanceTimersByTimeAsync(250)
    expect(h.extendCalls).toEqual([])
  })
})
