import { describe, expect, test, vi } from 'vitest'
import type { ClaimedRow } from '../../src/protocol/backend.js'
import { Claimer, type ClaimerSettings, SMALL_CLAIM_WAIT_MS } from '../../src/relay/claimer.js'
import { useFakeTimersPerTest } from './support/parts.js'

/** A claim statement the test answers by hand, and the slots it sees. */
function harness(settings: Partial<ClaimerSettings> = {}) {
  const pending: { limit: number; resolve: (rows: ClaimedRow[]) => void; reject: (e: unknown) => void }[] = []
  const state = { free: 10, held: 0 }
  const seen = {
    rows: [] as number[],
    errors: [] as { failures: number; retryInMs: number }[],
    recovered: [] as number[],
  }
  const claimer = new Claimer(
    {
      claim: (limit) => new Promise((resolve, reject) => pending.push({ limit, resolve, reject })),
      freeSlots: () => state.free,
      heldSlots: () => state.held,
      onRows: (rows) => seen.rows.push(rows.length),
      onError: (_e, failures, retryInMs) => seen.errors.push({ failures, retryInMs }),
      onRecovered: (failures) => seen.recovered.push(failures),
    },
    { batchSize: 4, minClaim: 2, pollIntervalMs: 1_000, mayOverlap: true, ...settings },
  )
  const rows = (n: number) => Array.from({ length: n }, () => ({}) as ClaimedRow)
  return { claimer, pending, state, seen, rows }
}

useFakeTimersPerTest()

describe('Claimer', () => {
  test('claims nothing until started; then one claim of at most batchSize, and polls after it', async () => {
    const h = harness()
    h.claimer.request()
    expect(h.pending).toHaveLength(0)
    h.claimer.start()
    h.claimer.request()
    expect(h.pending.map((p) => p.limit)).toEqual([4])
    h.pending.shift()!.resolve(h.rows(1))
    await vi.advanceTimersByTimeAsync(0)
    expect(h.pending).toHaveLength(0)
    await vi.advanceTimersByTimeAsync(1_000)
    expect(h.pending).toHaveLength(1)
    h.claimer.stop()
  })

  test('a full claim (a backlog) lets the next claims overlap, as far as free slots allow', async () => {
    const h = harness()
    h.state.free = 10
    h.claimer.start()
    h.claimer.request()
    h.pending.shift()!.resolve(h.rows(4))
    await vi.advanceTimersByTimeAsync(0)
    // 10 free slots, none reserved: claims of 4, 4 and the 2 left (>= minClaim) go out together.
    expect(h.pending.map((p) => p.limit)).toEqual([4, 4, 2])
    h.claimer.stop()
  })

  test('ordered topics (mayOverlap false) never overlap claims', async () => {
    const h = harness({ mayOverlap: false })
    h.claimer.start()
    h.claimer.request()
    h.pending.shift()!.resolve(h.rows(4))
    await vi.advanceTimersByTimeAsync(0)
    expect(h.pending.map((p) => p.limit)).toEqual([4])
    h.claimer.stop()
  })

  test('with few free slots while slots are busy, it waits SMALL_CLAIM_WAIT_MS, then claims what is free', async () => {
    const h = harness()
    h.state.free = 1
    h.state.held = 9
    h.claimer.start()
    h.claimer.request()
    expect(h.pending).toHaveLength(0)
    await vi.advanceTimersByTimeAsync(SMALL_CLAIM_WAIT_MS)
    expect(h.pending.map((p) => p.limit)).toEqual([1])
    h.claimer.stop()
  })

  test('failed claims back off exponentially (never a hot loop) and recover', async () => {
    const h = harness()
    h.claimer.start()
    h.claimer.request()
    for (let i = 0; i < 3; i++) {
      h.pending.shift()!.reject(new Error('down'))
      await vi.advanceTimersByTimeAsync(0)
      expect(h.pending).toHaveLength(0)
      await vi.advanceTimersByTimeAsync(h.seen.errors.at(-1)!.retryInMs)
      expect(h.pending).toHaveLength(1)
    }
    expect(h.seen.errors.map((e) => e.failures)).toEqual([1, 2, 3])
    expect(h.seen.errors.map((e) => e.retryInMs)).toSatisfy((d: number[]) => d[0]! <= 100 && d[2]! >= 200)
    h.pending.shift()!.resolve(h.rows(0))
    await vi.advanceTimersByTimeAsync(0)
    expect(h.seen.recovered).toEqual([3])
    h.claimer.stop()
  })

  test('no overlap while claims fail, even after a backlog', async () => {
    const h = harness()
    h.claimer.start()
    h.claimer.request()
    h.pending.shift()!.resolve(h.rows(4))
    await vi.advanceTimersByTimeAsync(0)
    expect(h.pending).toHaveLength(3)
    h.pending.shift()!.reject(new Error('down'))
    await vi.advanceTimersByTimeAsync(0)
    h.claimer.request()
    expect(h.pending).toHaveLength(2)
    h.claimer.stop()
  })

  test('stop clears every timer; whenIdle waits for the claims in flight', async () => {
    const h = harness()
    h.claimer.start()
    h.claimer.request()
    h.claimer.requestIn(50)
    h.claimer.stop()
    expect(vi.getTimerCount()).toBe(0)
    let idle = false
    const waiting = h.claimer.whenIdle().then(() => {
      idle = true
    })
    await vi.advanceTimersByTimeAsync(0)
    expect(idle).toBe(false)
    h.pending.shift()!.resolve(h.rows(1))
    await waiting
    expect(h.seen.rows).toEqual([1])
    // Stopped: no poll is armed after the late answer.
    expect(vi.getTimerCount()).toBe(0)
  })
})
