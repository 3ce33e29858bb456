import type { Outbox } from '../outbox/define-outbox.js'
import { OutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'
import type { BlockedKeyRow, OutboxBackend } from '../protocol/backend.js'
import { adminBackend, pageLimit, stringList } from './checks.js'

/** A key of an ordered topic held back by its head message, as {@link listBlockedKeys} returns it. */
export interface BlockedKey {
  readonly key: string
  /**
   * `'dead'`: the head was dead-lettered and blocks the key until it is redriven or discarded.
   * `'retrying'`: the head failed and waits for its next attempt (only with `includeRetrying`).
   */
  readonly reason: 'dead' | 'retrying'
  /** The head: the key's oldest message that is not delivered. */
  readonly head: {
    readonly id: string
    readonly topic: string
    readonly attempts: number
    readonly lastError: string | null
    readonly createdAt: Date
    /** When it was dead-lettered, or when its next attempt is due. */
    readonly since: Date
  }
  /** How many messages of the key wait behind the head. */
  readonly waiting: number
}

/** Options of {@link listBlockedKeys}. */
export interface ListBlockedKeysOptions {
  /**
   * Only keys whose head is of these topics.
   *
   * @defaultValue every ordered topic
   */
  topics?: readonly string[]
  /**
   * Also list keys whose head is retrying (failed, waiting for its backoff).
   *
   * @defaultValue `false`
   */
  includeRetrying?: boolean
  /**
   * At most this many keys (1 to 10 000).
   *
   * @defaultValue `100`
   */
  limit?: number
  /**
   * The next page: the `key` of the last entry of the previous page (keys are sorted).
   *
   * @defaultValue none: the first page
   */
  afterKey?: string
}

/**
 * Lists the keys of ordered topics whose head message holds back the rest: dead-lettered heads
 * (the key is blocked until you {@link redrive} or {@link discard} the head; see
 * docs/ordering.md) and, with `includeRetrying`, heads waiting for a retry. One read-only
 * statement; it reads every not-yet-delivered row of the ordered topics.
 *
 * @example
 * ```ts
 * for (const b of await listBlockedKeys(outbox, backend)) {
 *   console.log(b.key, b.waiting, b.head.lastError)
 *   // fixed the cause? await redrive(outbox, backend, { ids: [b.head.id] })
 * }
 * ```
 */
export async function listBlockedKeys(
  outbox: Outbox<any>,
  backend: OutboxBackend,
  options: ListBlockedKeysOptions = {},
): Promise<BlockedKey[]> {
  const can = adminBackend('listBlockedKeys', {
    outbox,
    backend,
    member: 'blockedKeys',
    options,
    known: ['topics', 'includeRetrying', 'limit', 'afterKey'],
  })
  const topics = stringList('listBlockedKeys', 'topics', options.topics)
  const limit = pageLimit('listBlockedKeys', options.limit)
  if (options.afterKey !== undefined && typeof options.afterKey !== 'string') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `listBlockedKeys afterKey must be a key string, got ${formatValue(options.afterKey)}.`,
    )
  }
  const rows = await can.blockedKeys({
    table: outbox.table,
    continueAfterDead: [...outbox.deadLetterContinues],
    topics,
    includeRetrying: options.includeRetrying === true,
    limit,
    afterKey: options.afterKey,
  })
  return rows.map(toBlockedKey)
}

function toBlockedKey(r: BlockedKeyRow): BlockedKey {
  return {
    key: r.key,
    reason: r.headState === 'dead' ? 'dead' : 'retrying',
    head: {
      id: r.headId,
      topic: r.headTopic,
      attempts: r.headAttempts,
      lastError: r.headLastError,
      createdAt: new Date(r.headCreatedAtMs),
      since: new Date(r.headSinceMs),
    },
    waiting: r.waiting,
  }
}
