import type { Inbox } from '../outbox/define-inbox.js'
import type { TableRef } from '../outbox/define-outbox.js'

// What a backend serves for an inbox (defineInbox): its table, purge and stats. Optional members
// of OutboxBackend; every backend of core's three dialects has them.

/** One batch of {@link InboxBackend.purgeInbox}. */
export interface InboxPurgeRequest {
  readonly table: TableRef
  readonly consumer: string
  /** Only rows processed more than this many ms ago. */
  readonly olderThanMs: number
  /** At most this many rows in this statement (purge loops over batches). */
  readonly limit: number
}

/** What {@link InboxBackend.inboxStats} counts. */
export interface InboxStatsRequest {
  readonly table: TableRef
  readonly consumer: string
}

/** The inbox of one consumer, from {@link InboxBackend.inboxStats}. */
export interface InboxStatsRow {
  /** Rows recorded (processed message ids kept). */
  readonly count: number
  /** Age of the oldest row (`now() - processed_at`, database clock) in ms; `null` when empty. */
  readonly oldestAgeMs: number | null
}

/** The inbox members of an {@link OutboxBackend}. */
export interface InboxBackend {
  /** Creates the inbox table and its index if missing; idempotent and safe to run concurrently. */
  migrateInbox?(inbox: Inbox): Promise<void>
  /** Deletes one batch (at most `limit` rows) of old rows of one consumer in one statement. Returns how many. */
  purgeInbox?(request: InboxPurgeRequest): Promise<number>
  /** Counts one consumer's rows, in one read-only statement. */
  inboxStats?(request: InboxStatsRequest): Promise<InboxStatsRow>
}

/** An {@link InboxStatsRow} from a row `(n, oldest_age_ms)`. */
export function inboxStatsRowFrom(row: Record<string, unknown> | undefined): InboxStatsRow {
  const count = Number(row?.n ?? 0)
  const age = row?.oldest_age_ms
  return {
    count,
    oldestAgeMs: count === 0 || age === null || age === undefined ? null : Math.max(0, Number(age)),
  }
}
