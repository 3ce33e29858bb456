import type { Handler, HandlerContext } from '@outboxkit/core'
import { brokerConfirmWithin, type ForwardableMessage } from '@outboxkit/core/adapter'
import { forwarderSettings, type RedisStreamForwarderOptions } from './forwarder-options.js'
import { assertRedisClient, type RedisStreamClient, SOURCE, type XAddTrim } from './redis-client.js'
import { xaddFailure } from './redis-errors.js'
import { streamEntryFields } from './stream-entry.js'

/** The reason a withdrawn XADD is aborted with (one object: no DOMException per withdrawal). */
const WITHDRAWN = Object.freeze(new Error('the forwarder gave up on this XADD'))

/**
 * The XADD of `fields`. While the client is not ready (reconnecting), node-redis keeps the command
 * in its offline queue: it then goes with a signal (`withdraw`) that takes it out of that queue once
 * the forwarder gives up on it (the relay then retries: a command sent after that would be a second
 * copy). A ready client writes the command to the socket at once, where it cannot be taken back
 * (its entry may still land), so it goes without a signal: no AbortController per message.
 */
function xAdd(
  client: RedisStreamClient,
  stream: string,
  fields: Record<string, string>,
  trim: XAddTrim | undefined,
  withdraw: AbortController | undefined,
): Promise<unknown> {
  const target = withdraw && client.withAbortSignal ? client.withAbortSignal(withdraw.signal) : client
  return trim ? target.xAdd(stream, '*', fields, trim) : target.xAdd(stream, '*', fields)
}

/**
 * A relay handler that appends each message to a Redis stream (XADD with an id chosen by Redis)
 * and resolves with the entry id once Redis replied. The entry's fields: `id` (the outbox message
 * id), `topic`, `key` (when set), `headers` (the message headers, `traceparent` included, as
 * JSON) and `payload` (JSON). Redis 7 has no idempotent XADD: a message the relay delivers again
 * is appended again, with the same `id`, so consumers dedup by that field.
 *
 * It rejects, and the relay retries with its backoff, when Redis refuses the XADD
 * (`OutboxError('BROKER')` quoting Redis, e.g. `WRONGTYPE`), when the connection is lost before
 * the reply (`BROKER`), or when no reply came within `timeoutMs` (`TIMEOUT`, also while node-redis
 * is reconnecting: the queued XADD is then withdrawn, never sent behind the relay's back).
 *
 * @param client - your node-redis client (`redis` 5 or later), connected; it reconnects by itself
 * @param options - `stream` (a key or a function of the message), `timeoutMs`, `maxLen`
 * @throws OutboxError `INVALID_CONFIG` for a client that is not node-redis or an invalid option.
 * @example
 * ```ts
 * const redis = await createClient({ url: 'redis://127.0.0.1:6379' }).connect()
 * createRelay(outbox, { backend, handlers: { 'order.shipped': redisStreamForwarder(redis, { stream: 'orders' }) } })
 * ```
 */
export function redisStreamForwarder(
  client: RedisStreamClient,
  options: RedisStreamForwarderOptions,
): Handler {
  const redis = assertRedisClient(client)
  const { streamOf, timeoutMs, maxLen } = forwarderSettings(options)
  const trim: XAddTrim | undefined =
    maxLen === undefined
      ? undefined
      : { TRIM: { strategy: 'MAXLEN', strategyModifier: '~', threshold: maxLen } }
  return async (message: ForwardableMessage, context?: HandlerContext): Promise<string> => {
    const fields = streamEntryFields(message)
    const stream = streamOf(message)
    const what = () => `message ${message.id} to stream ${JSON.stringify(stream)}`
    const withdraw =
      redis.withAbortSignal !== undefined && redis.isReady !== true ? new AbortController() : undefined
    const reply = xAdd(redis, stream, fields, trim, withdraw).catch((error: unknown) => {
      throw xaddFailure(error, what())
    })
    // Settled by brokerConfirmWithin, except when the relay aborted first: never unhandled.
    reply.catch(() => {})
    try {
      return String(
        await brokerConfirmWithin(
          reply,
          timeoutMs,
          () => `the XADD reply of ${what()}`,
          SOURCE,
          context?.signal,
        ),
      )
    } catch (error) {
      // Timed out or the relay gave up: a command still in the offline queue is never sent.
      withdraw?.abort(WITHDRAWN)
      throw error
    }
  }
}
