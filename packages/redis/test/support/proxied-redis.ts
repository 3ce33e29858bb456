// A node-redis client whose TCP path to Redis runs through a proxy the test file owns.
import { type PausableProxy, startPausableProxy } from '@outboxkit/conformance'
import { connectRedis, REDIS_URL, type RedisReader } from './redis-streams.js'

/** The proxy, a client through it and a client straight to Redis (to read back and clean up). */
export interface ProxiedRedis {
  readonly proxy: PausableProxy
  readonly proxied: RedisReader
  readonly direct: RedisReader
  close(): Promise<void>
}

/**
 * Starts a proxy in front of Redis and connects both clients; the proxied one waits
 * `reconnectDelayMs` before each reconnect attempt after the first.
 */
export async function proxiedRedis(reconnectDelayMs: number): Promise<ProxiedRedis> {
  const url = new URL(REDIS_URL)
  const proxy = await startPausableProxy({ host: url.hostname, port: Number(url.port || 6379) })
  const direct = await connectRedis()
  const proxied = await connectRedis({
    url: proxy.urlFor(REDIS_URL),
    socket: { reconnectStrategy: () => reconnectDelayMs },
  })
  return {
    proxy,
    proxied,
    direct,
    async close() {
      proxied.destroy()
      direct.destroy()
      await proxy.close()
    },
  }
}
