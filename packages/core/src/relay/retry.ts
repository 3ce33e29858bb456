import { OutboxError } from '../outbox/errors.js'

/** Options of {@link Retry}. */
export interface RetryOptions {
  /**
   * Reschedule the message this many milliseconds from now instead of the backoff delay.
   *
   * @defaultValue the relay's backoff delay (`retry`)
   */
  delayMs?: number
  /**
   * Recorded in `last_error`.
   *
   * @defaultValue none
   */
  reason?: string
}

/**
 * Throw from a handler to reschedule the message explicitly. It still counts as an attempt: on
 * the final attempt (`attempts === maxAttempts`) the message is dead-lettered instead.
 *
 * @example
 * ```ts
 * if (rateLimited) throw new Retry({ delayMs: 5_000, reason: 'rate limited' })
 * ```
 */
export class Retry extends Error {
  /** Delay before the next attempt, or `undefined` to use the relay's backoff. */
  readonly delayMs: number | undefined

  /** @param options - `delayMs` (>= 0) and an optional `reason` for `last_error` */
  constructor(options: RetryOptions = {}) {
    const delay = options.delayMs
    if (delay !== undefined && (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0)) {
      throw new OutboxError(
        'INVALID_CONFIG',
        `Retry delayMs must be a finite number >= 0, got ${String(delay)}.`,
        {
          source: 'relay',
        },
      )
    }
    super(options.reason ?? (delay === undefined ? 'retry requested' : `retry requested in ${delay} ms`))
    this.name = 'Retry'
    this.delayMs = delay
  }
}

/**
 * Throw from a handler to dead-letter the message now: retrying cannot help. The reason is
 * recorded in `last_error`.
 *
 * @example
 * ```ts
 * if (!customer) throw new Cancel(`customer ${id} does not exist`)
 * ```
 */
export class Cancel extends Error {
  /** @param reason - why the message is given up, recorded in `last_error` */
  constructor(reason = 'cancelled by handler') {
    super(String(reason))
    this.name = 'Cancel'
  }
}

/** Retry policy of a relay: capped exponential backoff with (by default full) jitter. */
export interface RetryPolicy {
  /**
   * Delay before the second attempt.
   *
   * @defaultValue `1_000`
   */
  baseMs?: number
  /**
   * Upper bound of any backoff delay.
   *
   * @defaultValue `300_000`
   */
  maxMs?: number
  /**
   * Fraction of the delay that is randomised, from 0 (none: exact exponential) to 1 (full
   * jitter: uniform in [0, delay]).
   *
   * @defaultValue `1`
   */
  jitter?: number
}

/** A validated {@link RetryPolicy}. */
export interface ResolvedRetryPolicy {
  readonly baseMs: number
  readonly maxMs: number
  readonly jitter: number
}

/** Validates a retry policy and fills in the defaults. Throws `INVALID_CONFIG`. */
export function resolveRetryPolicy(policy: RetryPolicy = {}): ResolvedRetryPolicy {
  const baseMs = policy.baseMs ?? 1_000
  const maxMs = policy.maxMs ?? 300_000
  const jitter = policy.jitter ?? 1
  const bad = (what: string, v: unknown) =>
    new OutboxError('INVALID_CONFIG', `retry.${what} is invalid: got ${String(v)}.`, { source: 'relay' })
  if (typeof baseMs !== 'number' || !Number.isFinite(baseMs) || baseMs < 0)
    throw bad('baseMs (a finite number >= 0)', baseMs)
  if (typeof maxMs !== 'number' || !Number.isFinite(maxMs) || maxMs < baseMs)
    throw bad('maxMs (a finite number >= baseMs)', maxMs)
  if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1))
    throw bad('jitter (a fraction from 0 to 1)', jitter)
  return { baseMs, maxMs, jitter }
}
