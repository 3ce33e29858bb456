// The inbox view of what rabbitmqForwarder sent, on the real broker: a message requeued and
// delivered again (redelivered: true) carries the same id, which is what processOnce records.
import { deliveredMessage, expectOutboxError, thrown } from '@outboxkit/conformance'
import { amqpInboxMessage, rabbitmqForwarder } from '@outboxkit/rabbitmq'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { TestBroker } from './rabbitmq-broker.js'

let broker: TestBroker
beforeAll(async () => {
  broker = await new TestBroker().start()
})
afterAll(() => broker.close())

test('a redelivered AMQP message has the same inbox id: the outbox message id (messageId)', async () => {
  const queue = await broker.queue('order.created')
  const connection = await broker.connect()
  const confirm = await connection.createConfirmChannel()
  const message = deliveredMessage({ payload: { orderId: 'o-2' } })
  await rabbitmqForwarder(confirm, { exchange: broker.exchange, routingKey: 'order.created' })(message, {
    signal: new AbortController().signal,
  })
  const channel = await connection.createChannel()
  const first = await channel.get(queue, { noAck: false })
  expect(first).not.toBe(false)
  expect(amqpInboxMessage(first as never)).toMatchObject({
    id: message.id,
    topic: message.topic,
    payload: { orderId: 'o-2' },
  })
  channel.nack(first as never, false, true) // the consumer "died" before its ack: requeued
  let again: Awaited<ReturnType<typeof channel.get>> = false
  for (let i = 0; i < 50 && again === false; i++) {
    again = await channel.get(queue, { noAck: false })
    if (again === false) await new Promise((r) => setTimeout(r, 20))
  }
  expect(again).not.toBe(false)
  expect((again as { fields: { redelivered: boolean } }).fields.redelivered).toBe(true)
  expect(amqpInboxMessage(again as never).id).toBe(message.id)
  channel.ack(again as never)
})

test('an AMQP message without messageId, or whose content is not JSON, is refused with INVALID_MESSAGE', () => {
  const content = Buffer.from('{}')
  expectOutboxError(
    thrown(() => amqpInboxMessage({ content, properties: {} })),
    'INVALID_MESSAGE',
    {
      message: [/messageId/],
    },
  )
  expectOutboxError(
    thrown(() => amqpInboxMessage({ content: Buffer.from('no'), properties: { messageId: 'm' } })),
    'INVALID_MESSAGE',
  )
  expect(amqpInboxMessage({ content, properties: { messageId: 'm', type: 't' } })).toMatchObject({
    id: 'm',
    topic: 't',
  })
})
