// What jetStreamForwarder refuses, checked on the real client library (a live connection).
import { jetstreamManager } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { deliveredMessage, expectOutboxError, rejection, thrown } from '@outboxkit/conformance'
import { jetStreamForwarder } from '@outboxkit/nats'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createTestStream, type TestStream } from './support/test-stream.js'

let stream: TestStream
beforeAll(async () => {
  stream = await createTestStream('options')
})
afterAll(() => stream?.delete())

const context = () => ({ signal: new AbortController().signal })
const refused = (fn: () => unknown, message: (RegExp | string)[]) =>
  expectOutboxError(thrown(fn), 'INVALID_CONFIG', { source: 'nats', message })

describe('the handle', () => {
  test('a NatsConnection is refused by name, with the call that gives a JetStream client', () => {
    const nc: NatsConnection = stream.nc
    refused(
      () => jetStreamForwarder(nc as never, { subject: 'a.b' }),
      ['got a NatsConnection', 'jetstream(nc)'],
    )
  })

  test('a JetStreamManager is refused by name', async () => {
    const jsm = await jetstreamManager(stream.nc)
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
    expect(typeof jetStreamForwarder(stream.js, { subject: 'a.b' })).toBe('function')
  })
})

describe('the options', () => {
  test('an unknown option names the closest valid one', () => {
    refused(
      () => jetStreamForwarder(stream.js, { subject: 'a.b', timeout: 10 } as never),
      [
        'unknown option "timeout" for jetStreamForwarder (did you mean "timeoutMs"?)',
        'Valid options: stream, subject, timeoutMs',
      ],
    )
    refused(() => jetStreamForwarder(stream.js, { subjet: 'a.b' } as never), ['did you mean "subject"?'])
  })

  test('no options, a missing or invalid subject', () => {
    refused(
      () => jetStreamForwarder(stream.js, undefined as never),
      ['needs an options object', 'got undefined'],
    )
    refused(() => jetStreamForwarder(stream.js, {} as never), ['a subject is a string, got undefined'])
    for (const subject of ['', 'orders.*', 'orders.>', 'a b', 'a..b', '.a'])
      refused(
        () => jetStreamForwarder(stream.js, { subject }),
        [JSON.stringify(subject), 'not a publish subject'],
      )
  })

  test('timeoutMs must be a positive number of milliseconds', () => {
    for (const timeoutMs of [0, -1, Number.NaN, '5000'])
      refused(
        () => jetStreamForwarder(stream.js, { subject: 'a.b', timeoutMs: timeoutMs as number }),
        ['timeoutMs must be a finite number of milliseconds > 0'],
      )
  })

  test('stream must be a stream name', () => {
    for (const name of ['', 'a.b', 'a b', 3])
      refused(
        () => jetStreamForwarder(stream.js, { subject: 'a.b', stream: name as string }),
        ['stream must be a stream name'],
      )
  })

  test('a subject function that gives no subject rejects that delivery with INVALID_CONFIG, and nothing is published', async () => {
    const forward = jetStreamForwarder(stream.js, { subject: () => 'orders.*' })
    const error = await rejection(Promise.resolve(forward(deliveredMessage(), context())))
    expectOutboxError(error, 'INVALID_CONFIG', {
      source: 'nats',
      message: ['subject function', '"orders.*"'],
    })
    expect(await stream.records()).toEqual([])
  })
})
