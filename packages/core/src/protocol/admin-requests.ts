// The admin side of the backend protocol: what outboxStats, listDead, countDead, listBlockedKeys,
// redrive, discard and purge ask an OutboxBackend for, and the rows it answers with.
import type { TableRef } from '../outbox/define-outbox.js'
import type { MessageRowFields } from './backend.js'

/** Which rows {@link OutboxBackend.purge} deletes. */
export interface PurgeRequest {
  readonly table: TableRef
  /** Terminal states to delete. */
  readonly states: readonly ('dead' | 'delivered')[]
  /** Only rows settled more than this long ago (by `available_at`). Default 0: all. */
  readonly olderThanMs: number
}

/** Which dead rows {@link OutboxBackend.redrive} puts back to `pending`. */
export interface RedriveRequest {
  readonly table: TableRef
  /** Only these ids (optional). */
  readonly ids?: readonly string[] | undefined
  /** Only these topics (optional). */
  readonly topics?: readonly string[] | undefined
}

/** The states of an outbox row. */
export type OutboxState = 'pending' | 'processing' | 'delivered' | 'dead'

/** What {@link OutboxBackend.stats} counts. */
export interface StatsRequest {
  readonly table: TableRef
  /**
   * Also count `'delivered'` rows (kept with `keepDelivered: true`). Default `false`: delivered
   * rows can be many, and counting them is a scan the queue gauges should not pay for.
   */
  readonly includeDelivered?: boolean | undefined
}

/** One group of {@link OutboxBackend.stats}: the rows of one topic in one state. */
export interface StatsRow {
  readonly topic: string
  readonly state: OutboxState
  readonly count: number
  /**
   * Age of the oldest row of the group (`now() - created_at`, database clock), in ms, for
   * `'pending'` and `'processing'`. 0 for terminal states: not read, so that counting the dead
   * rows reads the dead-row index only (PostgreSQL, SQLite; MySQL computes it).
   */
  readonly oldestAgeMs: number
  /**
   * For `'pending'` and `'processing'`: how late the oldest due row is (`now() - available_at` of
   * rows whose `available_at` has passed), in ms; `null` when no row of the group is due yet.
   * `null` for terminal states.
   */
  readonly oldestDueLagMs: number | null
}

/** Which dead rows {@link OutboxBackend.listDead} returns, newest death first. */
export interface ListDeadRequest {
  readonly table: TableRef
  /** Only these topics (optional). */
  readonly topics?: readonly string[] | undefined
  /** At most this many rows. */
  readonly limit: number
  /** The cursor: the last row of the previous page (its `deadAtMs` and `id` as returned). */
  readonly after?: { readonly deadAtMs: number; readonly id: string } | undefined
  /**
   * Only rows this text finds (optional): the row whose `id` it is, rows whose `key` or `topic`
   * it is exactly, and rows whose `last_error` contains it (ASCII case-insensitively).
   */
  readonly search?: string | undefined
}

/** Which dead rows {@link OutboxBackend.countDead} counts: the filters of {@link ListDeadRequest}. */
export interface CountDeadRequest {
  readonly table: TableRef
  /** Only these topics (optional). */
  readonly topics?: readonly string[] | undefined
  /** As {@link ListDeadRequest.search}. */
  readonly search?: string | undefined
  /** Count at most this many rows: the statement stops there (a bounded count). */
  readonly cap: number
}

/** A dead-lettered row as {@link OutboxBackend.listDead} returns it. */
export interface DeadRow extends MessageRowFields {
  readonly attempts: number
  /** The handler's error message, the `Cancel` reason, or why the claim gave up. */
  readonly lastError: string | null
  /** `created_at` in epoch milliseconds. */
  readonly createdAtMs: number
  /** When the row was dead-lettered (`available_at` of a dead row), in epoch milliseconds. */
  readonly deadAtMs: number
}

/** Which keys {@link OutboxBackend.blockedKeys} lists. */
export interface BlockedKeysRequest {
  readonly table: TableRef
  /** Ordered topics whose dead messages do not block their key (`onDeadLetter: 'continue'`). */
  readonly continueAfterDead: readonly string[]
  /** Only keys whose head is of these topics (optional). */
  readonly topics?: readonly string[] | undefined
  /** Also list keys whose head is pending a retry (it failed and waits for its backoff). */
  readonly includeRetrying: boolean
  /** At most this many keys. */
  readonly limit: number
  /** The cursor: list keys sorted after this one. */
  readonly afterKey?: string | undefined
}

/** A key of an ordered topic whose head message holds back the rest, from {@link OutboxBackend.blockedKeys}. */
export interface BlockedKeyRow {
  readonly key: string
  /** The head: the key's oldest message that is not delivered. */
  readonly headId: string
  readonly headTopic: string
  /** `'dead'`: blocked until the head is redriven or discarded. `'pending'`: retrying. */
  readonly headState: 'dead' | 'pending'
  readonly headAttempts: number
  readonly headLastError: string | null
  /** The head's `available_at` in epoch ms: when it died, or when its next attempt is due. */
  readonly headSinceMs: number
  /** The head's `created_at` in epoch ms. */
  readonly headCreatedAtMs: number
  /** Messages of the key behind the head, waiting (pending or processing). */
  readonly waiting: number
}

/** Which dead rows {@link OutboxBackend.discard} deletes. */
export interface DiscardRequest {
  readonly table: TableRef
  /** Only these ids (optional). */
  readonly ids?: readonly string[] | undefined
  /** Only these topics (optional). */
  readonly topics?: readonly string[] | undefined
}
