import { OutboxError } from '@outboxkit/core'
import { SOURCE } from './redis-client.js'

/** True when `error` is a node-redis `ErrorReply`: Redis itself answered with an error. */
function isErrorReply(error: unknown): error is Error {
  for (let p = error; typeof p === 'object' && p !== null; p = Object.getPrototypeOf(p))
    if ((p as object).constructor?.name === 'ErrorReply') return true
  return false
}

/**
 * The `OutboxError('BROKER')` of a failed XADD: Redis refused it (an error reply such as
 * `WRONGTYPE`, `OOM` or `NOPERM`, quoted), or the client lost its connection or is closed
 * before the reply. The node-redis error is the `cause`.
 *
 * @param error - what node-redis rejected the XADD with
 * @param what - which message and stream, e.g. `message <id> to stream "orders"`
 */
export function xaddFailure(error: unknown, what: string): OutboxError {
  if (error instanceof OutboxError) return error
  const reason = error instanceof Error ? error.message : String(error)
  const message = isErrorReply(error)
    ? `Redis refused the XADD of ${what}: ${reason}`
    : `the XADD of ${what} got no reply from Redis (${reason}): the connection was lost or the client is closed; the relay retries with backoff.`
  return new OutboxError('BROKER', message, { source: SOURCE, cause: error })
}
