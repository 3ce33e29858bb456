// rabbitmqForwarder: a relay handler that publishes each outbox message into RabbitMQ on a
// confirm channel and resolves only on its publisher confirm.
import type { DeliveredMessage, Handler, HandlerContext } from '@outboxkit/core'
import { brokerConfirmWithin, brokerEnvelope } from '@outboxkit/core/adapter'
import { type ChannelSource, factoryChannelSource, fixedChannelSource } from './channel-source.js'
import {
  type AmqpConfirmChannel,
  assertChannelSource,
  type ConfirmChannelFactory,
} from './confirm-channel.js'
import { type RabbitmqForwarderOptions, resolveForwarderOptions, routingKeyFor } from './forwarder-options.js'

/**
 * A relay handler that forwards each message into RabbitMQ: published on `exchange` with the
 * routing key of the options, `persistent: true` and `mandatory: true`, with `messageId` = the
 * outbox message id, `type` = its topic, `contentType: 'application/json'`, the payload as JSON
 * and every message header (`traceparent` included) plus `outboxkit-topic` and, when keyed,
 * `outboxkit-key` as AMQP headers.
 *
 * The handler resolves only on the publisher confirm (`basic.ack`). It rejects with an
 * `OutboxError` (so the relay retries with its backoff, then dead-letters) when RabbitMQ nacks the
 * message (`BROKER`), returns it as unroutable (`BROKER`, naming the exchange and routing key),
 * the channel or its connection closes before the confirm (`BROKER`), or no confirm arrives within
 * `timeoutMs` (`TIMEOUT`). The handler fits any topic, of a typed outbox too.
 *
 * @param channel - an amqplib 2.x `ConfirmChannel` (`await connection.createConfirmChannel()`),
 * or a function returning one (or a promise of one) that the forwarder calls on first use and
 * again once that channel, or its connection, has closed: a broker restart then heals without
 * restarting the relay. The forwarder adds `'return'`, `'error'` and `'close'` listeners to it.
 * @param options - `exchange`, `routingKey` (a string or a function of the message), `timeoutMs`
 * @throws OutboxError `INVALID_CONFIG` for a handle that is not a confirm channel or a function,
 * or for invalid options.
 *
 * @example
 * ```ts
 * const connection = await amqp.connect('amqp://localhost')
 * const channel = () => connection.createConfirmChannel()
 * createRelay(outbox, {
 *   backend,
 *   handlers: { 'order.paid': rabbitmqForwarder(channel, { exchange: 'orders', routingKey: (m) => m.topic }) },
 * })
 * ```
 */
export function rabbitmqForwarder(
  channel: AmqpConfirmChannel | ConfirmChannelFactory,
  options: RabbitmqForwarderOptions<DeliveredMessage>,
): Handler {
  const source = assertChannelSource(channel)
  const { exchange, routingKeyOf, timeoutMs } = resolveForwarderOptions<DeliveredMessage>(options)
  const channels: ChannelSource =
    typeof source === 'function' ? factoryChannelSource(source) : fixedChannelSource(source)
  return async (message: DeliveredMessage, context: HandlerContext) => {
    const envelope = brokerEnvelope(message, 'rabbitmq')
    const target = { exchange, routingKey: routingKeyFor(routingKeyOf, message) }
    const confirmed = channels.acquire().then((watched) => watched.publish(envelope, target))
    await brokerConfirmWithin(
      confirmed,
      timeoutMs,
      () =>
        `the publisher confirm of message ${message.id} on exchange ${JSON.stringify(exchange)} with routing key ${JSON.stringify(target.routingKey)}`,
      'rabbitmq',
      context?.signal,
    )
  }
}
