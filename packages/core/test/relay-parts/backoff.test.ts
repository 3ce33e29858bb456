import { describe, expect, test } from 'vitest'
import { backoffDelay, CLAIM_BACKOFF, SETTLE_BACKOFF } from '../../src/relay/backoff.js'

describe('the one backoff of claims and settles', () => {
  test('claims: 100 ms doubling to 10 s, within [d/2, d]', () => {
    for (const [failures, d] of [
      [1, 100],
      [2, 200],
      [5, 1_600],
      [8, 10_000],
      [40, 10_000],
    ] as const) {
      expect(backoffDelay(CLAIM_BACKOFF, failures, 0)).toBe(d)
      expect(backoffDelay(CLAIM_BACKOFF, failures, 0.999999)).toBe(Math.round(d / 2))
    }
  })

  test('settles: 100 ms doubling to 10 s, no jitter', () => {
    expect([1, 2, 3, 7, 8, 100].map((n) => backoffDelay(SETTLE_BACKOFF, n, 0.7))).toEqual([
      100, 200, 400, 6_400, 10_000, 10_000,
    ])
  })
})
