import { OutboxError } from '@outboxkit/core'
import { formatValue } from '@outboxkit/core/adapter'

/** The package name in error messages (`[outboxkit] [redis]`). */
export const SOURCE = 'redis'

/** The trimming of an XADD, as node-redis takes it (`MAXLEN ~ threshold`). */
export interface XAddTrim {
  readonly TRIM: { readonly strategy: 'MAXLEN'; readonly strategyModifier: '~'; readonly threshold: number }
}

/**
 * The slice of a node-redis client (`redis` 5 or later) the forwarder uses: a client from
 * `createClient()` (connected by you) or a pool from `createClientPool()`. `xAdd` resolves with
 * the entry id once Redis replied; `withAbortSignal` (node-redis's own command option) lets the
 * forwarder take a command it gave up on out of the offline queue before it is ever sent.
 */
export interface RedisStreamClient {
  xAdd(key: string, id: string, message: Record<string, string>, options?: XAddTrim): Promise<unknown>
  /** Present on node-redis clients and pools; without it a timed-out XADD may still be sent later. */
  withAbortSignal?(signal: AbortSignal): RedisStreamClient
}

const HOW =
  "Pass a node-redis client: const redis = await createClient({ url }).connect() (from 'redis' 5 or later)."

/** What `client` is, when it is not a node-redis client, for the refusal. */
function describeWrongClient(client: unknown): string {
  if (client instanceof Promise) return 'a Promise (await createClient().connect() first)'
  const c = client as { xadd?: unknown; sendCommand?: unknown } | null
  if (typeof c === 'object' && c !== null && typeof c.xadd === 'function')
    return `${formatValue(client)} with xadd but no xAdd (ioredis, or node-redis's legacy() interface, is not supported)`
  return formatValue(client)
}

/**
 * `client` as a {@link RedisStreamClient}, recognised by node-redis's own public method `xAdd`.
 *
 * @param client - what the user handed `redisStreamForwarder`
 * @throws OutboxError `INVALID_CONFIG` naming what was given.
 */
export function assertRedisClient(client: unknown): RedisStreamClient {
  const c = client as { xAdd?: unknown } | null
  if ((typeof c === 'object' || typeof c === 'function') && c !== null && typeof c.xAdd === 'function')
    return client as RedisStreamClient
  throw new OutboxError(
    'INVALID_CONFIG',
    `redisStreamForwarder needs a node-redis client, got ${describeWrongClient(client)}. ${HOW}`,
    { source: SOURCE },
  )
}
