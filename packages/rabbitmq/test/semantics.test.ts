// RabbitMQ's own semantics of the forwarder, on the real broker: persistent delivery, routing
// keys of the message, mandatory (a returned message is a failure), nacks (a queue that rejects
// publishes), a missing exchange (the server closes the channel) and a channel factory healing it.
import { deliveredMessage, expectOutboxError, rejection } from '@outboxkit/conformance'
import { rabbitmqForwarder } from '@outboxkit/rabbitmq'
import type { ConfirmChannel } from 'amqplib'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { TestBroker } from './rabbitmq-broker.js'

const context = () => ({ signal: new AbortController().signal })
const forwarded = (handler: ReturnType<typeof rabbitmqForwarder>, message = deliveredMessage()) =>
  Promise.resolve(handler(message, context()))

/** The file's exchange, its queues by routing key and a confirm channel on a connection of its own. */
async function startBroker() {
  const broker = await new TestBroker().start()
  const created = await broker.queue('order.created')
  const paid = await broker.queue('order.paid')
  const small = await broker.queue('small', { 'x-max-length-bytes': 64, 'x-overflow': 'reject-publish' })
  const connection = await broker.connect()
  return { broker, created, paid, small, connection, channel: await connection.createConfirmChannel() }
}
let broker: TestBroker
let on: Awaited<ReturnType<typeof startBroker>>
beforeAll(async () => {
  on = await startBroker()
  broker = on.broker
})
afterAll(() => broker.close())

test('messages are persistent, with messageId, type, contentType and every header', async () => {
  const message = deliveredMessage({
    headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tenant: 'acme' },
  })
  await forwarded(
    rabbitmqForwarder(on.channel, { exchange: broker.exchange, routingKey: 'order.created' }),
    message,
  )
  const [got, ...rest] = await broker.drain(on.created)
  expect(rest).toEqual([])
  expect(got!.properties).toMatchObject({
    deliveryMode: 2,
    messageId: message.id,
    type: message.topic,
    contentType: 'application/json',
    headers: { ...message.headers, 'outboxkit-topic': message.topic, 'outboxkit-key': message.key },
  })
  expect(JSON.parse(got!.content.toString('utf8'))).toEqual(message.payload)
  expect(got!.fields.routingKey).toBe('order.created')
})

test('the routing key may be a function of the message', async () => {
  const forward = rabbitmqForwarder(on.channel, { exchange: broker.exchange, routingKey: (m) => m.topic })
  const a = deliveredMessage({ topic: 'order.created' })
  const b = deliveredMessage({ topic: 'order.paid' })
  await Promise.all([forwarded(forward, a), forwarded(forward, b)])
  expect((await broker.drain(on.created)).map((m) => m.properties.messageId)).toEqual([a.id])
  expect((await broker.drain(on.paid)).map((m) => m.properties.messageId)).toEqual([b.id])
})

test('an unroutable message (returned before its confirm) rejects naming the exchange and routing key', async () => {
  const forward = rabbitmqForwarder(on.channel, { exchange: broker.exchange, routingKey: 'order.lost' })
  const message = deliveredMessage()
  const error = await rejection(forwarded(forward, message))
  expectOutboxError(error, 'BROKER', {
    source: 'rabbitmq',
    message: [
      'unroutable',
      message.id,
      `exchange "${broker.exchange}"`,
      'routing key "order.lost"',
      'NO_ROUTE',
    ],
  })
  // The channel stays usable: the next routable message is confirmed.
  await forwarded(rabbitmqForwarder(on.channel, { exchange: broker.exchange, routingKey: 'order.created' }))
  expect(await broker.drain(on.created)).toHaveLength(1)
})

test('a nack (a queue that rejects publishes once full) rejects with BROKER, the next message passes', async () => {
  const forward = rabbitmqForwarder(on.channel, { exchange: broker.exchange, routingKey: 'small' })
  const error = await rejection(forwarded(forward, deliveredMessage({ payload: { text: 'x'.repeat(200) } })))
  expectOutboxError(error, 'BROKER', {
    source: 'rabbitmq',
    message: ['RabbitMQ refused', 'basic.nack', 'routing key "small"'],
  })
  expect(await broker.drain(on.small)).toEqual([])
  await forwarded(forward, deliveredMessage({ payload: 1, key: null, headers: {} }))
  expect(await broker.drain(on.small)).toHaveLength(1)
})

test('a missing exchange closes the given channel: BROKER with the server reason, then a closed-channel error', async () => {
  const own = await on.connection.createConfirmChannel()
  const forward = rabbitmqForwarder(own, { exchange: `${broker.exchange}.missing`, routingKey: 'x' })
  expectOutboxError(await rejection(forwarded(forward)), 'BROKER', {
    source: 'rabbitmq',
    message: ['closed before RabbitMQ confirmed', 'NOT_FOUND'],
  })
  expectOutboxError(await rejection(forwarded(forward)), 'BROKER', {
    source: 'rabbitmq',
    message: ['has closed', 'Pass a function'],
  })
})

test('with a channel function, the forward after a closed channel opens a fresh one', async () => {
  const opened: ConfirmChannel[] = []
  const open = async () => {
    const fresh = await on.connection.createConfirmChannel()
    opened.push(fresh)
    return fresh
  }
  const forward = rabbitmqForwarder(open, { exchange: broker.exchange, routingKey: 'order.created' })
  await forwarded(forward)
  await forwarded(forward)
  expect(opened).toHaveLength(1)
  await opened[0]!.close()
  await forwarded(forward)
  expect(opened).toHaveLength(2)
  expect(await broker.drain(on.created)).toHaveLength(3)
})

test('a channel function that fails rejects with BROKER, and is called again on the next forward', async () => {
  let calls = 0
  const forward = rabbitmqForwarder(
    async () => {
      calls++
      if (calls === 1) throw new Error('connection refused')
      return on.connection.createConfirmChannel()
    },
    { exchange: broker.exchange, routingKey: 'order.created' },
  )
  expectOutboxError(await rejection(forwarded(forward)), 'BROKER', {
    source: 'rabbitmq',
    message: ['channel function of rabbitmqForwarder failed: connection refused'],
  })
  await forwarded(forward)
  expect(calls).toBe(2)
  expect(await broker.drain(on.created)).toHaveLength(1)
})

test('a forward the relay gives up on (its signal aborted) rejects with BROKER, never resolves', async () => {
  const forward = rabbitmqForwarder(on.channel, { exchange: broker.exchange, routingKey: 'order.created' })
  const controller = new AbortController()
  controller.abort()
  const error = await rejection(Promise.resolve(forward(deliveredMessage(), { signal: controller.signal })))
  expectOutboxError(error, 'BROKER', { source: 'rabbitmq', message: ['aborted'] })
  await broker.drain(on.created)
})
