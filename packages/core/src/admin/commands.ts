import { type Inbox, isInbox } from '../outbox/define-inbox.js'
import { assertOutbox, type Outbox } from '../outbox/define-outbox.js'
import { OutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'
import type { OutboxBackend } from '../protocol/backend.js'
import { assertAdminCall, assertBackend, messageSelection } from './checks.js'
import { migrateInbox, type PurgeInboxOptions, purgeInbox } from './inbox.js'

/**
 * Creates the outbox table and its indexes, or the inbox table and its index (given an inbox made
 * by `defineInbox`), if they do not exist. Safe to run again and from several processes at once.
 * For your own migration tool, use {@link outboxDdl} or `inboxDdl` instead.
 *
 * @example
 * ```ts
 * await migrate(outbox, pgBackend({ connectionString: process.env.DATABASE_URL }))
 * await migrate(inbox, backend)
 * ```
 */
export async function migrate(outbox: Outbox<any> | Inbox, backend: OutboxBackend): Promise<void> {
  if (isInbox(outbox)) return migrateInbox(outbox, backend)
  assertOutbox(outbox, 'migrate')
  assertBackend(backend, 'migrate')
  if (outbox.transport === 'wal' && backend.dialect !== 'postgres') {
    // PostgreSQL backends refuse on their own when they cannot (PGlite, wal_level, version).
    throw new OutboxError(
      'WAL_UNAVAILABLE',
      `transport 'wal' needs PostgreSQL 14+ (logical decoding), and ${backend.name} is ${backend.dialect}: nothing was created. Use transport 'table' here. See docs/wal.md.`,
      { source: backend.name },
    )
  }
  await backend.migrate(outbox)
}

/** Options of {@link purge}. */
export interface PurgeOptions {
  /**
   * Which terminal rows to delete. Default both `'dead'` and `'delivered'`.
   *
   * @defaultValue `['dead', 'delivered']`
   */
  states?: readonly ('dead' | 'delivered')[]
  /**
   * Only rows settled more than this many ms ago. Default 0 (all).
   *
   * @defaultValue `0`: any age
   */
  olderThanMs?: number
}

/**
 * Deletes terminal rows: dead letters and, with `keepDelivered`, delivered rows. Returns the
 * number deleted. Safe while relays run: it never touches pending or processing rows.
 *
 * Given an inbox (`defineInbox`), deletes its consumer's rows processed more than `olderThanMs`
 * ago (default 7 days), in batches (see {@link PurgeInboxOptions}).
 */
export async function purge(
  outbox: Inbox,
  backend: OutboxBackend,
  options?: PurgeInboxOptions,
): Promise<number>
export async function purge(
  outbox: Outbox<any>,
  backend: OutboxBackend,
  options?: PurgeOptions,
): Promise<number>
export async function purge(
  outbox: Outbox<any> | Inbox,
  backend: OutboxBackend,
  options: PurgeOptions | PurgeInboxOptions = {},
): Promise<number> {
  if (isInbox(outbox)) return purgeInbox(outbox, backend, options as PurgeInboxOptions)
  const opts = options as PurgeOptions
  assertAdminCall('purge', { outbox, backend, options, known: ['states', 'olderThanMs'] })
  const states = opts.states ?? ['dead', 'delivered']
  if (!Array.isArray(states) || states.some((s) => s !== 'dead' && s !== 'delivered')) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `purge states must be 'dead' and/or 'delivered', got ${JSON.stringify(states)}.`,
    )
  }
  const olderThanMs = opts.olderThanMs ?? 0
  if (typeof olderThanMs !== 'number' || !Number.isFinite(olderThanMs) || olderThanMs < 0) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `purge olderThanMs must be a finite number >= 0, got ${formatValue(olderThanMs)}.`,
    )
  }
  return backend.purge({ table: outbox.table, states, olderThanMs })
}

/** Options of {@link redrive}. */
export interface RedriveOptions {
  /**
   * Only these message ids.
   *
   * @defaultValue any id
   */
  ids?: readonly string[]
  /**
   * Only these topics.
   *
   * @defaultValue any topic
   */
  topics?: readonly string[]
}

/**
 * Moves dead-lettered messages back to `pending` with `attempts = 0`, due now. Without options it
 * redrives every dead message. Returns the number redriven.
 */
export async function redrive(
  outbox: Outbox<any>,
  backend: OutboxBackend,
  options: RedriveOptions = {},
): Promise<number> {
  assertAdminCall('redrive', { outbox, backend, options, known: ['ids', 'topics'] })
  return backend.redrive({ table: outbox.table, ...messageSelection('redrive', options) })
}
