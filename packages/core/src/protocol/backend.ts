import type { Outbox, TableRef } from '../outbox/define-outbox.js'
import type { OutboxDialect } from '../outbox/dialect.js'
import type {
  BlockedKeyRow,
  BlockedKeysRequest,
  CountDeadRequest,
  DeadRow,
  DiscardRequest,
  ListDeadRequest,
  PurgeRequest,
  RedriveRequest,
  StatsRequest,
  StatsRow,
} from './admin-requests.js'
import type { InboxBackend } from './inbox-backend.js'
import type { OutboxWal } from './wal.js'

export type {
  BlockedKeyRow,
  BlockedKeysRequest,
  CountDeadRequest,
  DeadRow,
  DiscardRequest,
  ListDeadRequest,
  OutboxState,
  PurgeRequest,
  RedriveRequest,
  StatsRequest,
  StatsRow,
} from './admin-requests.js'

/** The fields of a message row that {@link ClaimedRow} and {@link DeadRow} share. */
export interface MessageRowFields {
  /** UUIDv7 id. */
  readonly id: string
  readonly topic: string
  readonly key: string | null
  /** The payload as JSON text (the relay parses it once). */
  readonly payload: string
  /** The headers as JSON text. */
  readonly headers: string
}

/** A message row as returned by {@link OutboxBackend.claim}. */
export interface ClaimedRow extends MessageRowFields {
  /** Attempts after this claim (1-based: the first delivery has 1). */
  readonly attempts: number
  /** `created_at` in epoch milliseconds. */
  readonly createdAtMs: number
  /**
   * `'processing'`: claimed for delivery, run the handler. `'dead'`: the row had already used
   * `maxAttempts` without a result (its relay crashed or its handler hung) and the claim
   * dead-lettered it instead; do not run the handler.
   */
  readonly state: 'processing' | 'dead'
  /** For `'dead'` rows, the reason written to `last_error`. */
  readonly lastError?: string | null
  /**
   * The row belongs to an ordered topic (it has a `seq`): it is the head of its key, and settling
   * it may make the key's next message claimable. Set by {@link OutboxBackend.claim} for
   * `orderedTopics` requests.
   */
  readonly ordered?: boolean
}

/** What a relay asks {@link OutboxBackend.claim} for. */
export interface ClaimRequest {
  readonly table: TableRef
  /** Only rows of these topics (the relay's handlers). */
  readonly topics: readonly string[]
  /** At most this many rows (the relay's free concurrency slots, capped by `batchSize`). */
  readonly limit: number
  /** The lease: claimed rows are invisible to other claims until `now() + leaseMs`. */
  readonly leaseMs: number
  /** Rows whose `attempts` already reached this are dead-lettered at claim, not delivered. */
  readonly maxAttempts: number
  /**
   * Set when the outbox has ordered topics: then only the head of each key is claimed among rows
   * of ordered topics (docs/ordering.md). Absent: every due row is claimable (no ordering).
   */
  readonly ordering?:
    | {
        /** Ordered topics whose dead messages do not block their key (`onDeadLetter: 'continue'`). */
        readonly continueAfterDead: readonly string[]
      }
    | undefined
}

/** One handler outcome to write back, fenced by the attempts value seen at claim. */
export type Settlement =
  | { readonly id: string; readonly attempts: number; readonly outcome: 'delivered' }
  | {
      readonly id: string
      readonly attempts: number
      readonly outcome: 'retry'
      readonly delayMs: number
      readonly error: string
    }
  | { readonly id: string; readonly attempts: number; readonly outcome: 'dead'; readonly error: string }

/** A batch of settlements for {@link OutboxBackend.settle}. */
export interface SettleRequest {
  readonly table: TableRef
  /** `false`: delete delivered rows. `true`: keep them with `state = 'delivered'`. */
  readonly keepDelivered: boolean
  readonly settlements: readonly Settlement[]
}

/** Extends the lease of rows still being handled, fenced by attempts. */
export interface ExtendLeaseRequest {
  readonly table: TableRef
  readonly leaseMs: number
  readonly rows: readonly { readonly id: string; readonly attempts: number }[]
}

/** A live LISTEN subscription returned by {@link OutboxBackend.listen}. */
export interface WakeSubscription {
  /** Stops listening and releases the listening connection. */
  close(): Promise<void>
}

/** Callbacks of {@link OutboxBackend.listen}. */
export interface WakeHandlers {
  /** A publishing transaction committed on this channel. May be called spuriously; never required for correctness. */
  onWake(): void
  /** The listening connection failed or was cut; the backend reconnects on its own. */
  onError(error: unknown): void
  /** The listening connection is (re)established. */
  onConnect?(): void
  /**
   * The backend found that its LISTEN cannot hear this channel's notifications (for example a
   * probe NOTIFY it sent never came back: a transaction-mode pooler such as PgBouncer hands the
   * notifications to whichever client holds the server connection). The relay keeps delivering by
   * polling and says so once; `reason` says what was seen and what to do.
   */
  onUnavailable?(reason: string): void
}

/**
 * The protocol between the relay engine and a database. One implementation per driver (pg,
 * postgres.js, PGlite, ...); SQL per dialect is provided by core so backends stay thin.
 *
 * Every implementation MUST keep these rules, which the conformance suite checks:
 * - **Claims are atomic and disjoint.** Two concurrent `claim` calls, from this process or any
 *   other, never return the same row while its lease runs (PostgreSQL: `FOR UPDATE SKIP LOCKED`
 *   in one statement that also writes the lease).
 * - **Attempts count at claim.** `claim` increments `attempts` and moves `available_at` to the
 *   lease deadline in the same statement; a row whose `attempts` already reached `maxAttempts` is
 *   set to `'dead'` instead and returned with `state: 'dead'`.
 * - **Settles are fenced.** `settle` only changes rows whose `attempts` still equals the claimed
 *   value and whose state is still `'processing'`, so a stale relay cannot overwrite a newer claim.
 * - **Ordered rows are claimed head first.** With {@link ClaimRequest.ordering}, a row that has a
 *   `seq` (a message of an ordered topic) is claimed only while no row of the same `key` with a
 *   smaller `seq` is pending, processing, or dead (a dead one of a `continueAfterDead` topic does
 *   not count), so a key has at most one message in flight (see docs/ordering.md).
 * - **No handler runs inside a transaction.** `claim` commits before it returns; handlers run
 *   between `claim` and `settle` with no transaction or lock held.
 * - **Never owns what it was given.** A backend built around a user's pool or client leaves it
 *   open in `close()`; a backend that created its own connections closes them.
 */
export interface OutboxBackend extends InboxBackend {
  /** Short name used in error messages, e.g. `'pg'`. */
  readonly name: string
  /** SQL dialect of the database. */
  readonly dialect: OutboxDialect
  /** Creates the table and indexes if missing. MUST be idempotent and safe to run concurrently. */
  migrate(outbox: Outbox): Promise<void>
  /** Claims up to `limit` due rows (see the rules above). MUST commit before returning. */
  claim(request: ClaimRequest): Promise<ClaimedRow[]>
  /** Writes outcomes, fenced by attempts. Returns the ids whose settle took effect. */
  settle(request: SettleRequest): Promise<string[]>
  /** Pushes the lease of still-running rows forward, fenced by attempts. Returns ids extended. */
  extendLease?(request: ExtendLeaseRequest): Promise<string[]>
  /**
   * Optional LISTEN on `channel`. Wakes only cut latency: the relay keeps polling, so a backend
   * without `listen`, or a lost notification, costs latency, never correctness.
   */
  listen?(channel: string, handlers: WakeHandlers): Promise<WakeSubscription>
  /** Deletes terminal rows. Returns how many. */
  purge(request: PurgeRequest): Promise<number>
  /** Moves dead rows back to `pending` with `attempts = 0`. Returns how many. */
  redrive(request: RedriveRequest): Promise<number>
  /**
   * Optional: row counts by topic and state, with the age of the oldest row and the lag of the
   * oldest due row, in one read-only statement (used by the CLI and the relay's queue gauges).
   */
  stats?(request: StatsRequest): Promise<StatsRow[]>
  /** Optional: dead rows with their `last_error`, newest death first, in one statement. */
  listDead?(request: ListDeadRequest): Promise<DeadRow[]>
  /** Optional: how many dead rows match, counting at most `cap`, in one read-only statement. */
  countDead?(request: CountDeadRequest): Promise<number>
  /** Optional: deletes dead rows (by ids, topics, or all) in one statement. Returns how many. */
  discard?(request: DiscardRequest): Promise<number>
  /** Optional: keys of ordered topics held back by a dead (or retrying) head, in one statement. */
  blockedKeys?(request: BlockedKeysRequest): Promise<BlockedKeyRow[]>
  /**
   * Optional: the WAL transport (`transport: 'wal'`, PostgreSQL only): `migrate` then also creates
   * the slot, and the relay reads it. See docs/wal.md.
   */
  wal?: OutboxWal
  /** Releases connections the backend created itself. Using the backend later reopens them. */
  close(): Promise<void>
}
