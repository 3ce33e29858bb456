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
 * `createClient()` (connected by you), a pool from `createClientPool()` or a cluster client from
 * `createCluster()`. `xAdd` resolves with the entry id once Redis replied; `withAbortSignal`
 * (node-redis's own command option) lets the forwarder take a command it gave up on out of the
 * offline queue before it is ever sent.
 */
export interface RedisStreamClient {
  xAdd(key: string, id: string, message: Record<string, string>, options?: XAddTrim): Promise<unknown>
  /** Present on node-redis clients and pools (not on a cluster client): see {@link RedisStreamClient}. */
  withAbortSignal?(signal: AbortSignal): RedisStreamClient
  /**
   * node-redis's own flag: true while connected and ready, false while (re)connecting. Absent (a
   * pool, a cluster): every XADD then goes with a withdrawal signal, see `redisStreamForwarder`.
   */
  readonly isReady?: boolean
  /** node-redis 5's own mark of a command-issuing handle (absent on `legacy()` and `multi()`). */
  withCommandOptions(options: never): unknown
}

const HOW =
  "Pass a node-redis client: const redis = await createClient({ url }).connect() (from 'redis' 5 or later)."

/** What `client` is, when it is not a node-redis client, for the refusal. */
function describeWrongClient(client: unknown): string {
  if (client instanceof Promise) return 'a Promise (await createClient().connect() first)'
  const c = client as { xAdd?: unknown; xadd?: unknown; exec?: unknown } | null
  if (typeof c !== 'object' || c === null) return formatValue(client)
  if (typeof c.xAdd === 'function' && typeof c.exec === 'function')
    return `${formatValue(client)} with exec (a multi() transaction, which replies only on exec)`
  if (typeof c.xAdd === 'function')
    return `${formatValue(client)} with a callback xAdd (node-redis's legacy() interface is not supported)`
  if (typeof c.xadd === 'function')
    return `${formatValue(client)} with xadd but no xAdd (ioredis is not supported)`
  return formatValue(client)
}

/**
 * `client` as a {@link RedisStreamClient}, recognised by node-redis's own public methods `xAdd` and
 * `withCommandOptions` (node-redis 5 or later; the `legacy()` interface and `multi()` lack the latter).
 *
 * @param client - what the user handed `redisStreamForwarder`
 * @throws OutboxError `INVALID_CONFIG` naming what was given.
 */
export function assertRedisClient(client: unknown): RedisStreamClient {
  const c = client as { xAdd?: unknown; withCommandOptions?: unknown } | null
  if (
    (typeof c === 'object' || typeof c === 'function') &&
    c !== null &&
    typeof c.xAdd === 'function' &&
    typeof c.withCommandOptions === 'function'
  )
    return client as RedisStreamClient
  throw new OutboxError(
    'INVALID_CONFIG',
    `redisStreamForwarder needs a node-redis client, got ${describeWrongClient(client)}. ${HOW}`,
    { source: SOURCE },
  )
}
