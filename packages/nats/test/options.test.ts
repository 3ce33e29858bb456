// What jetStreamForwarder refuses, checked on the real client library (a live connection).
import { jetstreamManager } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { deliveredMessage, expectOutboxError, rejection, thrown } from '@outboxkit/conformance'
import { jetStreamForwarder } from '@outboxkit/nats'
import { describe, expect, test } from 'vitest'
import { useTestStream } from './support/test-stream.js'

const testStream = useTestStream('options')

const context = () => ({ signal: new AbortController().signal })
const refused = (fn: () => unknown, message: (RegExp | string)[]) =>
  expectOutboxError(thrown(fn), 'INVALID_CONFIG', { source: 'nats', message })

describe('the handle', () => {
  test('a NatsConnection is refused by name, with the call that gives a JetStream client', () => {
    const nc: NatsConnection = testStream().nc
    refused(
      () => jetStreamForwarder(nc as never, { subject: 'a.b' }),
      ['got a NatsConnection', 'jetstream(nc)'],
    )
  })

  test('a JetStreamManager is refused by name', async () => {
    const jsm = await jetstreamManager(testStream().nc)
    refused(
      () => jetStreamForwarder(jsm as never, { subject: 'a.b' }),
      ['got a JetStreamManager', 'jsm.jetstream()'],
    )
  })

  test('anything else is refused naming what was given', () => {
    refused(() => jetStreamForwarder(undefined as never, { subject: 'a.b' }), ['got undefined'])
    refused(() => jetStreamForwarder({ publish() {} } as never, { subject: 'a.b' }), ['got a plain object'])
  })

  test('the real jetstream(nc) client is accepted', () => {
    expect(typeof jetStreamForwarder(testStream().js, { subject: 'a.b' })).toBe('function')
  })
})

describe('the options', () => {
  test('an unknown option names the closest valid one', () => {
    refused(
      () => jetStreamForwarder(testStream().js, { subject: 'a.b', timeout: 10 } as never),
      [
        'unknown option "timeout" for jetStreamForwarder (did you mean "timeoutMs"?)',
        'Valid options: stream, subject, timeoutMs',
      ],
    )
    refused(
      () => jetStreamForwarder(testStream().js, { subjet: 'a.b' } as never),
      ['did you mean "subject"?'],
    )
  })

  test('no options, a missing or invalid subject', () => {
    refused(
      () => jetStreamForwarder(testStream().js, undefined as never),
      ['needs an options object', 'got undefined'],
    )
    refused(() => jetStreamForwarder(testStream().js, {} as never), ['a subject is a string, got undefined'])
    for (const subject of ['', 'orders.*', 'orders.>', 'a b', 'a..b', '.a'])
      refused(
        () => jetStreamForwarder(testStream().js, { subject }),
        [JSON.stringify(subject), 'not a publish subject'],
      )
  })

  test('timeoutMs must be a positive number of milliseconds', () => {
    for (const timeoutMs of [0, -1, Number.NaN, '5000'])
      refused(
        () => jetStreamForwarder(testStream().js, { subject: 'a.b', timeoutMs: timeoutMs as number }),
        ['timeoutMs must be a finite number of milliseconds > 0'],
      )
  })

  test('stream must be a stream name', () => {
    for (const name of ['', 'a.b', 'a b', 3])
      refused(
        () => jetStreamForwarder(testStream().js, { subject: 'a.b', stream: name as string }),
        ['stream must be a stream name'],
      )
  })

  test('a subject function that gives no subject rejects that delivery with INVALID_CONFIG, and nothing is published', async () => {
    const forward = jetStreamForwarder(testStream().js, { subject: () => 'orders.*' })
    const error = await rejection(Promise.resolve(forward(deliveredMessage(), context())))
    expectOutboxError(error, 'INVALID_CONFIG', {
      source: 'nats',
      message: ['subject function', '"orders.*"'],
    })
    expect(await testStream().records()).toEqual([])
  })
})
