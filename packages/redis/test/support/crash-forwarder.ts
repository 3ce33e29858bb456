// The forwarder of the crash test's relay processes (see the conformance kit's relay-child.ts):
// a node-redis client of its own and redisStreamForwarder on it.
import type { Handler } from '@outboxkit/core'
import { redisStreamForwarder } from '@outboxkit/redis'
import { createClient } from 'redis'

/** `broker`: `{ url, stream }`. */
export async function createForwarder(broker: Record<string, unknown>): Promise<Handler> {
  const client = createClient({ url: String(broker.url) })
  client.on('error', () => {})
  await client.connect()
  return redisStreamForwarder(client, { stream: String(broker.stream), timeoutMs: 2_000 })
}
