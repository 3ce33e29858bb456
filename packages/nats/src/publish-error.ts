// What a failed JetStream publish becomes: an OutboxError the relay retries with backoff
// (TIMEOUT for a PubAck that did not come, BROKER for everything the broker or the connection said).
// The client's errors are recognised by their names, so any copy of @nats-io/nats-core fits.
import { isOutboxError, OutboxError } from '@outboxkit/core'
import { NATS_SOURCE } from './jetstream-client.js'

const CONNECTION_ERRORS = ['ClosedConnectionError', 'DrainingConnectionError', 'ConnectionError']

const nameOf = (error: unknown): string | undefined => (error instanceof Error ? error.name : undefined)

/** True when `error`, or an error in its `cause` chain, is JetStream's or NATS's "no responders". */
function isNoResponders(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e.name === 'NoResponders' || e.name === 'JetStreamNotEnabled') return true
    const check = (e as { isNoResponders?: () => boolean }).isNoResponders
    if (typeof check === 'function' && check.call(e)) return true
  }
  return false
}

/** The refusal JetStream sent (`JetStreamApiError`): its description and error code. */
function apiRefusal(error: unknown): string | undefined {
  if (nameOf(error) !== 'JetStreamApiError' && nameOf(error) !== 'StreamNotFoundError') return undefined
  const api = (error as { apiError?: () => { description?: string; err_code?: number; code?: number } })
    .apiError
  const details = typeof api === 'function' ? api.call(error) : undefined
  const code = details?.err_code === undefined ? '' : ` (err_code ${details.err_code})`
  return `${details?.description ?? (error as Error).message}${code}`
}

/**
 * `error`, thrown by `js.publish` of message `id` on `subject`, as an `OutboxError`:
 * `TIMEOUT` when the client waited for the PubAck in vain, `BROKER` (with `cause`) when no stream
 * captures the subject, when JetStream refused the message (its reason and `err_code`), or when
 * the connection is closed or lost. An `OutboxError` is returned as it is.
 */
export function toPublishError(error: unknown, id: string, subject: string): OutboxError {
  if (isOutboxError(error)) return error
  const source = NATS_SOURCE
  const what = `message ${id} on subject ${JSON.stringify(subject)}`
  if (nameOf(error) === 'TimeoutError')
    return new OutboxError(
      'TIMEOUT',
      `no PubAck from JetStream for ${what} in time; the relay retries with backoff.`,
      {
        cause: error,
        source,
      },
    )
  if (isNoResponders(error))
    return new OutboxError(
      'BROKER',
      `no JetStream stream captures the subject of ${what} (JetStream answered 503 no responders): add the subject to a stream's subjects, or fix the forwarder's subject.`,
      { cause: error, source },
    )
  const refusal = apiRefusal(error)
  if (refusal !== undefined)
    return new OutboxError('BROKER', `JetStream refused ${what}: ${refusal}.`, { cause: error, source })
  if (CONNECTION_ERRORS.includes(nameOf(error) ?? ''))
    return new OutboxError(
      'BROKER',
      `the NATS connection failed before JetStream confirmed ${what}: ${(error as Error).message}.`,
      { cause: error, source },
    )
  return new OutboxError(
    'BROKER',
    `publishing ${what} to JetStream failed: ${String((error as Error)?.message ?? error)}.`,
    {
      cause: error,
      source,
    },
  )
}
