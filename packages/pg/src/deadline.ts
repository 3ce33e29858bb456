import { OutboxError } from '@outboxkit/core'
import { SOURCE } from './backend-options.js'

/**
 * `promise`, or an `OutboxError('TIMEOUT')` naming `what` a little after `ms` (no bound when
 * `ms` is undefined).
 */
export function deadline<T>(promise: Promise<T>, ms: number | undefined, what: string): Promise<T> {
  if (ms === undefined) return promise
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    // A little slack over the driver's own query_timeout, so the driver's error wins when it fires.
    timer = setTimeout(
      () =>
        reject(
          new OutboxError(
            'TIMEOUT',
            `${what} did not answer within ${ms} ms (commandTimeoutMs). Check that PostgreSQL is reachable.`,
            { source: SOURCE },
          ),
        ),
      ms + 50,
    )
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
