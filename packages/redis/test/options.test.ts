import { deliveredMessage, expectOutboxError, rejection, thrown } from '@outboxkit/conformance'
import { redisStreamForwarder } from '@outboxkit/redis'
import { createClient, createCluster } from 'redis'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { connectRedis, type RedisReader, uniqueKey } from './support/redis-streams.js'

const context = () => ({ signal: new AbortController().signal })
let redis: RedisReader
beforeAll(async () => {
  redis = await connectRedis()
})
afterAll(() => redis?.destroy())

describe('options are checked when the forwarder is made', () => {
  test.each([
    [
      'an unknown name, with the closest valid one',
      { stream: 's', timeout: 5 },
      ['unknown option "timeout"', 'did you mean "timeoutMs"?'],
    ],
    ['a typo of maxLen', { stream: 's', maxlen: 5 }, ['did you mean "maxLen"?']],
    ['no stream', {}, ['stream must be a non-empty stream key or a function of the message, got undefined']],
    ['an empty stream', { stream: '' }, ['got the string ""']],
    ['a stream that is a number', { stream: 7 }, ['got number 7']],
    [
      'timeoutMs 0',
      { stream: 's', timeoutMs: 0 },
      ['timeoutMs must be a finite number of milliseconds > 0, got number 0'],
    ],
    ['timeoutMs as a string', { stream: 's', timeoutMs: '5000' }, ['got the string "5000"']],
    ['maxLen 1.5', { stream: 's', maxLen: 1.5 }, ['maxLen must be an integer >= 1, got number 1.5']],
    ['no options at all', undefined, ['needs options { stream }, got undefined']],
  ])('%s: INVALID_CONFIG', (_, options, message) => {
    const error = thrown(() => redisStreamForwarder(redis, options as never))
    expectOutboxError(error, 'INVALID_CONFIG', { source: 'redis', message })
  })

  test('a stream function returning no key fails that message with INVALID_CONFIG', async () => {
    const forward = redisStreamForwarder(redis, { stream: () => '' })
    const error = await rejection(Promise.resolve(forward(deliveredMessage(), context())))
    expectOutboxError(error, 'INVALID_CONFIG', {
      source: 'redis',
      message: ['the stream function returned the string ""'],
    })
  })
})

describe('the handle is recognised by node-redis’s own xAdd', () => {
  test('the unawaited connect() promise is refused, saying to await it', () => {
    const pending = createClient({ url: 'redis://127.0.0.1:1' })
    const promise = Promise.resolve(pending)
    const error = thrown(() => redisStreamForwarder(promise as never, { stream: 's' }))
    expectOutboxError(error, 'INVALID_CONFIG', {
      source: 'redis',
      message: ['got a Promise', 'await createClient().connect()'],
    })
  })

  test('the legacy() interface of node-redis is refused, naming what it is', () => {
    const error = thrown(() => redisStreamForwarder(redis.legacy() as never, { stream: 's' }))
    expectOutboxError(error, 'INVALID_CONFIG', {
      source: 'redis',
      message: ['needs a node-redis client, got a RedisLegacyClient instance with a callback xAdd'],
    })
  })

  test('a multi() transaction of node-redis is refused', () => {
    const error = thrown(() => redisStreamForwarder(redis.multi() as never, { stream: 's' }))
    expectOutboxError(error, 'INVALID_CONFIG', { source: 'redis', message: ['a multi() transaction'] })
  })

  test.each([
    ['null', null, 'got null'],
    ['a URL string', 'redis://127.0.0.1:6379', 'got the string "redis://127.0.0.1:6379"'],
    [
      'an object with xadd (ioredis-like)',
      { xadd: () => {} },
      'with xadd but no xAdd (ioredis is not supported)',
    ],
  ])('%s is refused', (_, handle, message) => {
    const error = thrown(() => redisStreamForwarder(handle as never, { stream: 's' }))
    expectOutboxError(error, 'INVALID_CONFIG', { source: 'redis', message: [message] })
  })

  test('a client, a pool and a cluster client of node-redis are accepted without connecting', () => {
    const cluster = createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] })
    for (const handle of [createClient(), redis.createPool(), cluster])
      expect(typeof redisStreamForwarder(handle, { stream: uniqueKey('accepted') })).toBe('function')
  })

  test('a client that is not connected: the forward rejects with BROKER, the client error as cause', async () => {
    const forward = redisStreamForwarder(createClient({ url: 'redis://127.0.0.1:1' }), { stream: 's' })
    const error = await rejection(Promise.resolve(forward(deliveredMessage(), context())))
    expectOutboxError(error, 'BROKER', {
      source: 'redis',
      message: ['got no reply from Redis (The client is closed)'],
    })
    expect(error.cause).toBeInstanceOf(Error)
  })
})
