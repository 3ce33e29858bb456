// JetStream's side of the contract, on the real server: what the stream stores, a duplicate ack
// as a success, an uncaptured subject, a refused message and a closed connection as failures.

import { jetstream } from '@nats-io/jetstream'
import { deliveredMessage, expectOutboxError, rejection } from '@outboxkit/conformance'
import { jetStreamForwarder } from '@outboxkit/nats'
import { describe, expect, test } from 'vitest'
import { connectNats, useTestStream } from './support/test-stream.js'

const MAX_MSG_SIZE = 16 * 1024
const testStream = useTestStream('semantics', MAX_MSG_SIZE)

const context = () => ({ signal: new AbortController().signal })

describe('what the stream stores', () => {
  test('Nats-Msg-Id is the message id; topic, key, content type and every header travel as NATS headers', async () => {
    const message = deliveredMessage({
      headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tenant: 'acme' },
    })
    await jetStreamForwarder(testStream().js, { subject: `${testStream().prefix}.orders` })(
      message,
      context(),
    )
    const [record] = await testStream().records()
    expect(record!.subject).toBe(`${testStream().prefix}.orders`)
    expect(record!.natsHeaders).toEqual({
      'Nats-Msg-Id': message.id,
      'outboxkit-topic': 'order.created',
      'outboxkit-key': 'order-1',
      'content-type': 'application/json',
      traceparent: message.headers.traceparent,
      tenant: 'acme',
    })
    expect(record!.payload).toEqual(message.payload)
  })

  test('the subject may be a function of the message', async () => {
    const forward = jetStreamForwarder(testStream().js, {
      subject: (m) => `${testStream().prefix}.${m.topic}`,
    })
    await forward(deliveredMessage({ topic: 'order.paid' }), context())
    const [record] = await testStream().records()
    expect(record!.subject).toBe(`${testStream().prefix}.order.paid`)
  })

  test('a duplicate ack is a success: a redelivery inside the duplicate window resolves and is stored once', async () => {
    const message = deliveredMessage()
    const forward = jetStreamForwarder(testStream().js, { subject: `${testStream().prefix}.orders` })
    await forward(message, context())
    const direct = await testStream().js.publish(`${testStream().prefix}.orders`, '{}', { msgID: message.id })
    expect(direct.duplicate, 'JetStream itself sees the id as a duplicate').toBe(true)
    await expect(Promise.resolve(forward({ ...message, attempts: 3 }, context()))).resolves.toBeUndefined()
    expect((await testStream().records()).map((r) => r.id)).toEqual([message.id])
  })

  test('the stream option: a message captured by the expected stream is stored', async () => {
    const forward = jetStreamForwarder(testStream().js, {
      subject: `${testStream().prefix}.orders`,
      stream: testStream().name,
    })
    await forward(deliveredMessage(), context())
    expect(await testStream().records()).toHaveLength(1)
  })
})

describe('failures reject, so the relay retries', () => {
  test('a subject no stream captures: BROKER, naming the subject and the 503', async () => {
    const message = deliveredMessage()
    const forward = jetStreamForwarder(testStream().js, {
      subject: testStream().uncaptured,
      timeoutMs: 2_000,
    })
    const error = await rejection(Promise.resolve(forward(message, context())))
    expectOutboxError(error, 'BROKER', {
      source: 'nats',
      message: [
        message.id,
        JSON.stringify(testStream().uncaptured),
        'no JetStream stream captures',
        '503 no responders',
      ],
    })
  })

  test('a payload above the stream max_msg_size: BROKER with JetStream reason, nothing stored', async () => {
    const message = deliveredMessage({ payload: { blob: 'x'.repeat(MAX_MSG_SIZE * 2) } })
    const forward = jetStreamForwarder(testStream().js, { subject: `${testStream().prefix}.orders` })
    const error = await rejection(Promise.resolve(forward(message, context())))
    expectOutboxError(error, 'BROKER', {
      source: 'nats',
      message: ['JetStream refused', /message size exceeds maximum/i, /err_code \d+/],
    })
    expect(await testStream().records()).toEqual([])
  })

  test('another stream than the expected one: BROKER with JetStream reason', async () => {
    const forward = jetStreamForwarder(testStream().js, {
      subject: `${testStream().prefix}.orders`,
      stream: `other_${process.pid}`,
    })
    const error = await rejection(Promise.resolve(forward(deliveredMessage(), context())))
    expectOutboxError(error, 'BROKER', { source: 'nats', message: ['JetStream refused', /expected stream/i] })
    expect(await testStream().records()).toEqual([])
  })

  test('a closed connection: BROKER with the client error as cause', async () => {
    const nc = await connectNats()
    const forward = jetStreamForwarder(jetstream(nc), { subject: `${testStream().prefix}.orders` })
    await nc.close()
    const error = await rejection(Promise.resolve(forward(deliveredMessage(), context())))
    expectOutboxError(error, 'BROKER', { source: 'nats', message: ['the NATS connection failed'] })
    expect((error.cause as Error).name).toBe('ClosedConnectionError')
  })

  test('an aborted delivery rejects with BROKER at once', async () => {
    const controller = new AbortController()
    controller.abort()
    const forward = jetStreamForwarder(testStream().js, { subject: `${testStream().prefix}.orders` })
    const error = await rejection(Promise.resolve(forward(deliveredMessage(), { signal: controller.signal })))
    expectOutboxError(error, 'BROKER', { source: 'nats', message: ['aborted'] })
  })

  test('a header NATS cannot carry: INVALID_MESSAGE naming it', async () => {
    const forward = jetStreamForwarder(testStream().js, { subject: `${testStream().prefix}.orders` })
    const error = await rejection(
      Promise.resolve(forward(deliveredMessage({ headers: { 'bad:name': 'v' } }), context())),
    )
    expectOutboxError(error, 'INVALID_MESSAGE', { source: 'nats', message: ['"bad:name"'] })
  })
})
