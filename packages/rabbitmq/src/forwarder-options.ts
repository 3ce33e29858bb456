// The options of rabbitmqForwarder, checked once when the forwarder is made: unknown names,
// the exchange, the routing key (a string or a function of the message) and the timeout.
import { OutboxError } from '@outboxkit/core'
import { assertKnownOptions, type ForwardableMessage, formatValue, positiveMs } from '@outboxkit/core/adapter'

/** The options of {@link rabbitmqForwarder}. */
export interface RabbitmqForwarderOptions<M extends ForwardableMessage = ForwardableMessage> {
  /** The exchange to publish to (`''`: the default exchange, which routes by queue name). */
  exchange: string
  /** The routing key, or a function of the message that returns it (e.g. `(m) => m.topic`). */
  routingKey: string | ((message: M) => string)
  /**
   * How long to wait for the publisher confirm (including opening a channel through the
   * factory), in ms, before the handler rejects with `TIMEOUT`.
   *
   * @defaultValue `5_000`
   */
  timeoutMs?: number
}

/** The checked options: the routing key always a function. */
export interface ResolvedForwarderOptions<M extends ForwardableMessage> {
  readonly exchange: string
  readonly routingKeyOf: (message: M) => string
  readonly timeoutMs: number
}

const KNOWN = ['exchange', 'routingKey', 'timeoutMs'] as const
/** The default of `timeoutMs`. */
export const DEFAULT_TIMEOUT_MS = 5_000

function refuse(message: string): never {
  throw new OutboxError('INVALID_CONFIG', message, { source: 'rabbitmq' })
}

/**
 * `options` checked and resolved.
 *
 * @throws OutboxError `INVALID_CONFIG` for a missing or wrong exchange or routing key, a bad
 * `timeoutMs` or an unknown option (naming the closest valid one).
 */
export function resolveForwarderOptions<M extends ForwardableMessage>(
  options: unknown,
): ResolvedForwarderOptions<M> {
  if (typeof options !== 'object' || options === null)
    refuse(
      `rabbitmqForwarder options must be an object with exchange and routingKey, got ${formatValue(options)}.`,
    )
  assertKnownOptions(options, KNOWN, { source: 'rabbitmq', what: 'rabbitmqForwarder' })
  const { exchange, routingKey, timeoutMs } = options as Partial<RabbitmqForwarderOptions<M>>
  if (typeof exchange !== 'string')
    refuse(
      `rabbitmqForwarder exchange must be a string (\`''\` for the default exchange), got ${formatValue(exchange)}.`,
    )
  if (typeof routingKey !== 'string' && typeof routingKey !== 'function')
    refuse(
      `rabbitmqForwarder routingKey must be a string or a function of the message, got ${formatValue(routingKey)}.`,
    )
  return {
    exchange,
    routingKeyOf: typeof routingKey === 'string' ? () => routingKey : routingKey,
    timeoutMs: positiveMs('timeoutMs', timeoutMs, DEFAULT_TIMEOUT_MS, 'rabbitmq'),
  }
}

/**
 * The routing key `routingKeyOf` gives for `message`, checked.
 *
 * @throws OutboxError `INVALID_CONFIG` when the function throws or returns no string.
 */
export function routingKeyFor<M extends ForwardableMessage>(
  routingKeyOf: (message: M) => string,
  message: M,
): string {
  let key: unknown
  try {
    key = routingKeyOf(message)
  } catch (cause) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `the routingKey function of rabbitmqForwarder threw for message ${message.id}.`,
      {
        cause,
        source: 'rabbitmq',
      },
    )
  }
  if (typeof key !== 'string')
    refuse(
      `the routingKey function of rabbitmqForwarder must return a string, got ${formatValue(key)} for message ${message.id}.`,
    )
  return key
}
