import { isOutboxError, Retry } from '@outboxkit/core'
import { backoffDelay, resolveRetryPolicy } from '@outboxkit/core/adapter'
import { describe, expect, test } from 'vitest'

describe('backoffDelay', () => {
  test('jitter 0: exact capped exponential', () => {
    const policy = resolveRetryPolicy({ baseMs: 100, maxMs: 1_000, jitter: 0 })
    expect([1, 2, 3, 4, 5, 6, 60, 1_000, 1e9].map((a) => backoffDelay(policy, a))).toEqual([
      100, 200, 400, 800, 1_000, 1_000, 1_000, 1_000, 1_000,
    ])
    // The random draw does not matter without jitter.
    expect(backoffDelay(policy, 3, 0.99)).toBe(400)
  })

  test('defaults: base 1 s, cap 300 s, full jitter', () => {
    const policy = resolveRetryPolicy()
    expect(policy).toEqual({ baseMs: 1_000, maxMs: 300_000, jitter: 1 })
    expect(backoffDelay(policy, 1, 0)).toBe(1_000)
    expect(backoffDelay(policy, 30, 0)).toBe(300_000)
  })

  test('full jitter stays in [0, d] at the extremes of the draw', () => {
    const policy = resolveRetryPolicy({ baseMs: 100, maxMs: 1_000, jitter: 1 })
    for (const attempt of [1, 2, 3, 4, 5, 20]) {
      const d = Math.min(1_000, 100 * 2 ** (attempt - 1))
      expect(backoffDelay(policy, attempt, 0)).toBe(d)
      expect(backoffDelay(policy, attempt, 0.999999)).toBe(0)
      expect(backoffDelay(policy, attempt, 0.5)).toBe(d / 2)
    }
  })

  test('partial jitter stays in [(1 - jitter) d, d]', () => {
    const policy = resolveRetryPolicy({ baseMs: 1_000, maxMs: 1_000, jitter: 0.25 })
    expect(backoffDelay(policy, 1, 0)).toBe(1_000)
    expect(backoffDelay(policy, 1, 0.999999)).toBe(750)
  })

  test('full jitter spreads samples over the whole range', () => {
    const policy = resolveRetryPolicy({ baseMs: 1_000, maxMs: 60_000, jitter: 1 })
    const d = 8_000
    const samples = Array.from({ length: 2_000 }, () => backoffDelay(policy, 4))
    for (const s of samples) {
      expect(s).toBeGreaterThanOrEqual(0)
      expect(s).toBeLessThanOrEqual(d)
    }
    expect(Math.min(...samples)).toBeLessThan(d * 0.05)
    expect(Math.max(...samples)).toBeGreaterThan(d * 0.95)
    expect(new Set(samples).size).toBeGreaterThan(1_000)
    // Every tenth of the range is hit.
    const deciles = new Set(samples.map((s) => Math.min(9, Math.floor((s / d) * 10))))
    expect(deciles.size).toBe(10)
  })

  test('invalid policies and Retry delays are INVALID_CONFIG', () => {
    for (const policy of [
      { baseMs: -1 },
      { baseMs: Number.NaN },
      { maxMs: 10, baseMs: 100 },
      { jitter: 1.5 },
      { jitter: -0.1 },
      { jitter: Number.NaN },
    ]) {
      let err: unknown
      try {
        resolveRetryPolicy(policy)
      } catch (e) {
        err = e
      }
      expect(isOutboxError(err, 'INVALID_CONFIG'), JSON.stringify(policy)).toBe(true)
    }
    for (const delayMs of [-1, Number.NaN, Number.POSITIVE_INFINITY, '5' as unknown as number]) {
      expect(() => new Retry({ delayMs })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }))
    }
    expect(new Retry({ delayMs: 0 }).delayMs).toBe(0)
  })
})
