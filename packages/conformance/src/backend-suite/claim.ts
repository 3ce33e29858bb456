import { expect, test } from 'vitest'
import type { BackendSuite } from './suite.js'

/** Backend tests: claim takes due rows in order, within its limit, disjoint across relays. */
export function registerClaimTests(suite: BackendSuite): void {
  const { insert, row, claim } = suite
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
    const { ctx, backend } = suite.opened
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
}
