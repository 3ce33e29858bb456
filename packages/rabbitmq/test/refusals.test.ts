// What rabbitmqForwarder refuses, with real amqplib handles: a connection, a channel without
// confirms, a factory that returns one, and every wrong option.
import { deliveredMessage, expectOutboxError, rejection, thrown } from '@outboxkit/conformance'
import { type AmqpConfirmChannel, rabbitmqForwarder } from '@outboxkit/rabbitmq'
import type { Channel, ChannelModel } from 'amqplib'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { TestBroker } from './rabbitmq-broker.js'

const context = () => ({ signal: new AbortController().signal })
const options = { exchange: 'orders', routingKey: 'created' }

/** A refusal of `handle` at `rabbitmqForwarder(handle, ...)`, whose message says `message`. */
const refusedHandle = (handle: unknown, ...message: string[]) =>
  expectOutboxError(
    thrown(() => rabbitmqForwarder(handle as never, options)),
    'INVALID_CONFIG',
    {
      source: 'rabbitmq',
      message,
    },
  )

describe('rabbitmqForwarder refuses what is not a confirm channel', () => {
  let broker: TestBroker
  let connection: ChannelModel
  beforeAll(async () => {
    broker = await new TestBroker().start()
    connection = await broker.connect()
  })
  afterAll(() => broker.close())

  test('a ConfirmChannel of amqplib is accepted, and its type fits the structural one', async () => {
    const typed: AmqpConfirmChannel = await connection.createConfirmChannel()
    expect(typeof rabbitmqForwarder(typed, options)).toBe('function')
    expect(typeof rabbitmqForwarder(() => connection.createConfirmChannel(), options)).toBe('function')
  })

  test('a connection is refused, telling to create a confirm channel', () => {
    refusedHandle(connection, 'an amqplib connection', 'createConfirmChannel()')
  })

  test('a channel without publisher confirms is refused', async () => {
    const plain: Channel = await connection.createChannel()
    refusedHandle(plain, 'without publisher confirms', 'connection.createChannel()')
  })

  test('a value that is no handle is refused, naming it', () => {
    for (const value of [undefined, null, 'amqp://localhost', { publish() {} }])
      refusedHandle(value, 'needs an amqplib ConfirmChannel')
  })

  test('a factory that returns a plain channel rejects the forward with INVALID_CONFIG', async () => {
    const plain = await connection.createChannel()
    const forward = rabbitmqForwarder(() => plain as never, options)
    expectOutboxError(
      await rejection(Promise.resolve(forward(deliveredMessage(), context()))),
      'INVALID_CONFIG',
      {
        source: 'rabbitmq',
        message: ['must return an amqplib ConfirmChannel', 'without publisher confirms'],
      },
    )
  })
})

describe('rabbitmqForwarder checks its options', () => {
  const channel = { publish() {}, waitForConfirms() {}, on() {} } as unknown as AmqpConfirmChannel
  const refused = (opts: unknown, ...message: string[]) =>
    expectOutboxError(
      thrown(() => rabbitmqForwarder(channel, opts as never)),
      'INVALID_CONFIG',
      {
        source: 'rabbitmq',
        message,
      },
    )

  test('an unknown option names the closest valid one', () => {
    refused(
      { ...options, timeoutMS: 100 },
      '"timeoutMS"',
      'did you mean "timeoutMs"?',
      'exchange, routingKey, timeoutMs',
    )
    refused({ ...options, routingkey: 'x' }, 'did you mean "routingKey"?')
  })

  test('exchange and routingKey are required, of the right type', () => {
    refused(undefined, 'options must be an object', 'undefined')
    refused({ routingKey: 'x' }, 'exchange must be a string', 'undefined')
    refused({ exchange: 7, routingKey: 'x' }, 'exchange must be a string', '7')
    refused({ exchange: 'orders' }, 'routingKey must be a string or a function', 'undefined')
    refused({ exchange: 'orders', routingKey: ['a'] }, 'routingKey must be a string or a function')
  })

  test('timeoutMs must be a positive number of milliseconds', () => {
    for (const timeoutMs of [0, -1, Number.NaN, '100'])
      refused({ ...options, timeoutMs }, 'timeoutMs must be')
  })

  test('a routingKey function that returns no string rejects the forward', async () => {
    const forward = rabbitmqForwarder(channel, { exchange: 'orders', routingKey: () => 42 as never })
    expectOutboxError(
      await rejection(Promise.resolve(forward(deliveredMessage(), context()))),
      'INVALID_CONFIG',
      {
        source: 'rabbitmq',
        message: ['routingKey function', 'must return a string', '42'],
      },
    )
  })
})
