import { runForwarderConformance } from '@outboxkit/conformance'
import { redisStreamForwarder } from '@outboxkit/redis'
import { connectRedis, receivedFrom, uniqueKey, wrongTypeKey } from './support/redis-streams.js'

runForwarderConformance({
  name: 'redis',
  async setup() {
    const redis = await connectRedis()
    const stream = uniqueKey('conformance')
    // Nothing is unroutable in Redis: the closest is a key that holds no stream (WRONGTYPE).
    const notAStream = await wrongTypeKey(redis, 'conformance-string')
    return {
      forwarder: () => redisStreamForwarder(redis, { stream, timeoutMs: 2_000 }),
      unroutable: () => redisStreamForwarder(redis, { stream: notAStream, timeoutMs: 2_000 }),
      received: () => receivedFrom(redis, stream),
      async reset() {
        await redis.del(stream)
      },
      dedupsById: false,
      async teardown() {
        await redis.del([stream, notAStream])
        redis.destroy()
      },
    }
  },
})
