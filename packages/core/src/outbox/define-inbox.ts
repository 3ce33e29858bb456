import { parseTableName, type TableRef } from './define-outbox.js'
import { OutboxError } from './errors.js'
import { formatValue } from './format-value.js'
import { assertKnownOptions } from './options.js'

// The consumer side's deduplication table: `defineInbox`, the checks of `processOnce`'s
// arguments, and what `processOnce` resolves.

/** Longest consumer name and message id an inbox stores (the same on every dialect). */
export const INBOX_MAX_ID_LENGTH = 255

/** Options of {@link defineInbox}. */
export interface DefineInboxOptions {
  /**
   * The table; default `'inbox'`; `'schema.table'` works too. Validated, never spliced raw.
   *
   * @defaultValue `'inbox'`
   */
  table?: string
  /**
   * Who processes: each consumer keeps its own record of the message ids it processed, so two
   * consumers (billing, shipping) of one message each run their handler once. Default `'default'`.
   * At most 255 characters.
   *
   * @defaultValue `'default'`
   */
  consumer?: string
}

/** An inbox, made by {@link defineInbox}: a table and the consumer whose processed ids it records. */
export interface Inbox {
  /** Brand that tells an inbox from an outbox. */
  readonly kind: 'outboxkit.inbox'
  /** The validated table. */
  readonly table: TableRef
  /** The consumer name. */
  readonly consumer: string
}

/** What `processOnce` needs of a message: a string `id` (a relay message, or `{ id }` from a broker header). */
export interface InboxMessage {
  readonly id: string
}

/**
 * What `processOnce` resolves: `{ processed: true, result }` when this call ran the callback
 * (`result` is what it returned), `{ processed: false }` when this consumer had already processed
 * the message (the callback did not run).
 */
export type ProcessOnceResult<T> =
  | { readonly processed: true; readonly result: T }
  | { readonly processed: false }

const INBOX_OPTIONS = ['table', 'consumer'] as const

/**
 * Defines an inbox: the table where a consumer records, in its own transaction, the ids of the
 * messages it processed, so that a redelivery becomes a no-op (see `processOnce` in every adapter
 * package, and docs/inbox.md). Create the table with `migrate(inbox, backend)` or
 * `inboxDdl(inbox, dialect)`.
 *
 * @example
 * ```ts
 * import { defineInbox } from '@outboxkit/core'
 * export const inbox = defineInbox({ table: 'inbox', consumer: 'billing' })   // both optional
 * ```
 * @throws OutboxError `INVALID_CONFIG` for an unknown option, an invalid table name, or a consumer
 * that is not a non-empty string of at most 255 characters.
 */
export function defineInbox(options: DefineInboxOptions = {}): Inbox {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `defineInbox expects an options object, got ${formatValue(options)}.`,
    )
  }
  assertKnownOptions(options, INBOX_OPTIONS, { source: 'core', what: 'defineInbox' })
  const table = parseTableName(options.table === undefined ? 'inbox' : options.table)
  const consumer = options.consumer === undefined ? 'default' : options.consumer
  if (typeof consumer !== 'string' || consumer.length === 0 || consumer.length > INBOX_MAX_ID_LENGTH) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `defineInbox consumer must be a non-empty string of at most ${INBOX_MAX_ID_LENGTH} characters, like 'billing', got ${formatValue(consumer)}.`,
    )
  }
  return Object.freeze({ kind: 'outboxkit.inbox', table, consumer })
}

/** True when `value` is an inbox made by {@link defineInbox}. */
export function isInbox(value: unknown): value is Inbox {
  return !!value && typeof value === 'object' && (value as Inbox).kind === 'outboxkit.inbox'
}

/** Throws `INVALID_CONFIG` unless `value` is an inbox made by {@link defineInbox}. */
export function assertInbox(value: unknown, source: string): asserts value is Inbox {
  if (!isInbox(value)) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `expected an inbox made by defineInbox() as the first argument, got ${formatValue(value)}.`,
      { source },
    )
  }
}

/**
 * The id of `message` for `processOnce`: a non-empty string of at most 255 characters. Throws
 * `INVALID_MESSAGE` otherwise, before any statement, so the caller's transaction stays usable.
 */
export function inboxMessageId(message: unknown, source: string): string {
  const id = message !== null && typeof message === 'object' ? (message as { id?: unknown }).id : undefined
  if (typeof id !== 'string' || id.length === 0 || id.length > INBOX_MAX_ID_LENGTH) {
    const got =
      message !== null && typeof message === 'object' ? `an id of ${formatValue(id)}` : formatValue(message)
    throw new OutboxError(
      'INVALID_MESSAGE',
      `processOnce needs a message with a string id (1 to ${INBOX_MAX_ID_LENGTH} characters): a relay message, or { id } from the broker's message id; got ${got}. Nothing was written.`,
      { source },
    )
  }
  return id
}

/** Throws `INVALID_CONFIG` unless `fn` is a function (the work to run once). */
export function assertProcessFn(
  fn: unknown,
  source: string,
  what = 'processOnce needs a callback as its fourth argument',
): asserts fn is () => unknown {
  if (typeof fn !== 'function') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${what} (the work to run once), got ${formatValue(fn)}. Nothing was written.`,
      { source },
    )
  }
}
