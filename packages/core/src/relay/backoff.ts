import type { ResolvedRetryPolicy } from './retry.js'

/**
 * The one backoff of the relay: after failure number `failures` (1-based) the delay is
 * `d = min(maxMs, baseMs * 2^(failures-1))`, then `d - jitter * d * random()`. Handler retries use
 * the relay's `retry` policy; failed claims and settles use {@link CLAIM_BACKOFF} and
 * {@link SETTLE_BACKOFF}.
 *
 * @param random - a number in [0, 1); injectable for tests
 */
export function backoffDelay(
  policy: ResolvedRetryPolicy,
  failures: number,
  random: number = Math.random(),
): number {
  const exp = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, Math.min(failures - 1, 60)))
  return Math.round(exp - policy.jitter * exp * random)
}

/** After a failed claim: 100 ms doubling to 10 s, half jittered (many relays do not retry in step). */
export const CLAIM_BACKOFF: ResolvedRetryPolicy = Object.freeze({ baseMs: 100, maxMs: 10_000, jitter: 0.5 })

/** After a failed settle: 100 ms doubling to 10 s (the outcomes wait in memory, fenced). */
export const SETTLE_BACKOFF: ResolvedRetryPolicy = Object.freeze({ baseMs: 100, maxMs: 10_000, jitter: 0 })
