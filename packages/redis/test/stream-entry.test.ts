import { deliveredMessage, expectOutboxError, rejection } from '@outboxkit/conformance'
import { redisStreamForwarder } from '@outboxkit/redis'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import {
  connectRedis,
  type RedisReader,
  streamEntries,
  uniqueKey,
  wrongTypeKey,
} from './support/redis-streams.js'

const context = () => ({ signal: new AbortController().signal })
let redis: RedisReader
const stream = uniqueKey('entry')
const other = uniqueKey('entry-other')
let notAStream: string
beforeAll(async () => {
  redis = await connectRedis()
  notAStream = await wrongTypeKey(redis, 'entry-string')
})
beforeEach(async () => {
  await redis.del([stream, other])
})
afterAll(async () => {
  await redis?.del([stream, other, notAStream])
  redis?.destroy()
})

describe('what Redis holds for a forwarded message', () => {
  test('the fields id, topic, key, headers (JSON) and payload (JSON), and the handler resolves with the entry id', async () => {
    const message = deliveredMessage({
      headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tenant: 't1' },
    })
    const entryId = await redisStreamForwarder(redis, { stream })(message, context())
    const [entry, ...rest] = await streamEntries(redis, stream)
    expect(rest).toEqual([])
    expect(entryId).toBe(entry!.entryId)
    expect(Object.keys(entry!.fields)).toEqual(['id', 'topic', 'key', 'headers', 'payload'])
    expect(entry!.fields).toEqual({
      id: message.id,
      topic: message.topic,
      key: message.key,
      headers: JSON.stringify(message.headers),
      payload: JSON.stringify(message.payload),
    })
  })

  test('a message without a key has no key field; empty headers are {}', async () => {
    await redisStreamForwarder(redis, { stream })(deliveredMessage({ key: null, headers: {} }), context())
    const [entry] = await streamEntries(redis, stream)
    expect(Object.keys(entry!.fields)).toEqual(['id', 'topic', 'headers', 'payload'])
    expect(entry!.fields.headers).toBe('{}')
  })

  test('the stream may be a function of the message', async () => {
    const forward = redisStreamForwarder(redis, {
      stream: (m) => (m.topic === 'order.created' ? stream : other),
    })
    const created = deliveredMessage()
    const paid = deliveredMessage({ topic: 'order.paid' })
    await forward(created, context())
    await forward(paid, context())
    expect((await streamEntries(redis, stream)).map((e) => e.fields.id)).toEqual([created.id])
    expect((await streamEntries(redis, other)).map((e) => e.fields.id)).toEqual([paid.id])
  })

  test('maxLen trims the stream approximately (MAXLEN ~): never below maxLen, far below what was added', async () => {
    const forward = redisStreamForwarder(redis, { stream, maxLen: 10 })
    for (let i = 0; i < 300; i++) await forward(deliveredMessage(), context())
    const length = await redis.xLen(stream)
    expect(length).toBeGreaterThanOrEqual(10)
    expect(length).toBeLessThan(300)
  })

  test('a payload that is not JSON is refused before anything is sent (INVALID_MESSAGE)', async () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const error = await rejection(
      Promise.resolve(
        redisStreamForwarder(redis, { stream })(deliveredMessage({ payload: cyclic }), context()),
      ),
    )
    expectOutboxError(error, 'INVALID_MESSAGE', { source: 'redis' })
    expect(await redis.exists(stream)).toBe(0)
  })
})

describe('what Redis refuses', () => {
  test('a key holding no stream: BROKER naming the key and quoting WRONGTYPE, the ErrorReply as cause', async () => {
    const message = deliveredMessage()
    const error = await rejection(
      Promise.resolve(redisStreamForwarder(redis, { stream: notAStream })(message, context())),
    )
    expectOutboxError(error, 'BROKER', {
      source: 'redis',
      message: [
        `Redis refused the XADD of message ${message.id} to stream ${JSON.stringify(notAStream)}`,
        'WRONGTYPE',
      ],
    })
    expect(error.cause).toBeInstanceOf(Error)
    expect(await redis.get(notAStream)).toBe('not a stream')
  })

  test('an aborted delivery (the relay gave up) rejects with BROKER', async () => {
    const controller = new AbortController()
    controller.abort()
    const error = await rejection(
      Promise.resolve(
        redisStreamForwarder(redis, { stream })(deliveredMessage(), { signal: controller.signal }),
      ),
    )
    expectOutboxError(error, 'BROKER', { source: 'redis', message: ['aborted'] })
  })
})
