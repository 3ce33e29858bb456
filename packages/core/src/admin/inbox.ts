import { assertInbox, type Inbox } from '../outbox/define-inbox.js'
import { OutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'
import type { OutboxBackend } from '../protocol/backend.js'
import type { InboxBackend } from '../protocol/inbox-backend.js'
import { assertAdminOptions, assertBackend } from './checks.js'

// The admin side of an inbox: migrate, purge in batches, stats.

/** The default retention of an inbox's rows: 7 days (what `purge(inbox, ...)` keeps without `olderThanMs`). */
export const INBOX_DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000

/** Options of `purge(inbox, backend, options)`. */
export interface PurgeInboxOptions {
  /**
   * Delete rows processed more than this many ms ago. Default {@link INBOX_DEFAULT_RETENTION_MS}
   * (7 days). A message redelivered after its row was purged is processed again: keep this longer
   * than the longest redelivery you expect (relay retries, a broker's redelivery window).
   *
   * @defaultValue `604_800_000` (7 days, {@link INBOX_DEFAULT_RETENTION_MS})
   */
  olderThanMs?: number
  /**
   * Rows per DELETE statement (each in a transaction of its own). Default 1 000; 1 to 100 000.
   *
   * @defaultValue `1_000`
   */
  batchSize?: number
}

/** The inbox backend member `member` of `backend`, or `INVALID_CONFIG` naming what to use. */
function inboxBackend<K extends keyof InboxBackend>(
  backend: unknown,
  member: K,
  what: string,
): Required<Pick<InboxBackend, K>> {
  assertBackend(backend, what)
  const b = backend as OutboxBackend
  if (typeof b[member] !== 'function') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${what} is not supported by the ${b.name} backend (it has no ${member}()). Use a backend of @outboxkit/pg, /postgres-js, /pglite, /mysql or /sqlite.`,
    )
  }
  return b as unknown as Required<Pick<InboxBackend, K>>
}

/** `migrate(inbox, backend)`: creates the inbox table and its index if missing. */
export async function migrateInbox(inbox: Inbox, backend: OutboxBackend): Promise<void> {
  assertInbox(inbox, 'migrate')
  await inboxBackend(backend, 'migrateInbox', 'migrate(inbox)').migrateInbox(inbox)
}

function numberOption(what: string, name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${what} ${name} must be a finite number from ${min} to ${max}, got ${formatValue(value)}.`,
    )
  }
  return value
}

/**
 * `purge(inbox, backend, options)`: deletes the consumer's rows processed more than `olderThanMs`
 * ago, `batchSize` rows per statement until a statement deletes fewer (each batch walks the
 * `(consumer, processed_at)` index, so no statement scans the table or holds many locks). Returns
 * the number deleted.
 */
export async function purgeInbox(
  inbox: Inbox,
  backend: OutboxBackend,
  options: PurgeInboxOptions = {},
): Promise<number> {
  const what = 'purge(inbox)'
  assertInbox(inbox, what)
  const b = inboxBackend(backend, 'purgeInbox', what)
  assertAdminOptions(options, ['olderThanMs', 'batchSize'], what)
  const olderThanMs = numberOption(
    what,
    'olderThanMs',
    options.olderThanMs ?? INBOX_DEFAULT_RETENTION_MS,
    0,
    Number.MAX_SAFE_INTEGER,
  )
  const limit = numberOption(what, 'batchSize', options.batchSize ?? 1_000, 1, 100_000)
  if (!Number.isInteger(limit)) {
    throw new OutboxError('INVALID_CONFIG', `${what} batchSize must be an integer, got ${limit}.`)
  }
  let total = 0
  for (;;) {
    const n = await b.purgeInbox({ table: inbox.table, consumer: inbox.consumer, olderThanMs, limit })
    total += n
    if (n < limit) return total
  }
}

/** What {@link inboxStats} returns. */
export interface InboxStats {
  readonly consumer: string
  /** Processed message ids kept (rows of this consumer). */
  readonly count: number
  /** Age of the oldest row in ms (how far back a duplicate is still recognised); `null` when empty. */
  readonly oldestAgeMs: number | null
}

/**
 * The inbox of the consumer: how many processed ids it keeps and the age of the oldest, in one
 * read-only statement.
 *
 * @example
 * ```ts
 * const { count, oldestAgeMs } = await inboxStats(inbox, backend)
 * ```
 */
export async function inboxStats(inbox: Inbox, backend: OutboxBackend): Promise<InboxStats> {
  assertInbox(inbox, 'inboxStats')
  const row = await inboxBackend(backend, 'inboxStats', 'inboxStats').inboxStats({
    table: inbox.table,
    consumer: inbox.consumer,
  })
  return { consumer: inbox.consumer, ...row }
}
