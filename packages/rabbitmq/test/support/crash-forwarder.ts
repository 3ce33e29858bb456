// The forwarder of the crash test's relay processes (see the conformance kit's relay-child.ts):
// an amqplib connection of its own and rabbitmqForwarder with a channel function on it.
import type { Handler } from '@outboxkit/core'
import { rabbitmqForwarder } from '@outboxkit/rabbitmq'
import amqp from 'amqplib'

/** `broker`: `{ url, exchange, routingKey }`. */
export async function createForwarder(broker: Record<string, unknown>): Promise<Handler> {
  const connection = await amqp.connect(String(broker.url))
  connection.on('error', () => {})
  return rabbitmqForwarder(() => connection.createConfirmChannel(), {
    exchange: String(broker.exchange),
    routingKey: String(broker.routingKey),
  })
}
