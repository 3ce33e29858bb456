/**
 * Stable error codes carried by {@link OutboxError}. Match on `code`, never on the message text.
 *
 * - `NOT_IN_TRANSACTION`: `publish` was handed something that is not an open transaction.
 * - `INVALID_MESSAGE`: a message (topic, payload, key, headers, options) failed validation.
 * - `INVALID_CONFIG`: `defineOutbox`, `createRelay` or a backend got an invalid option.
 * - `TIMEOUT`: a database command, or a broker's confirmation, did not answer within its bound.
 * - `DATABASE`: the database reported an error (see `cause`).
 * - `BROKER`: a message broker refused a forwarded message, or its connection or channel was
 *   lost before it confirmed (see `cause`); the relay retries it with backoff.
 * - `RELAY_STATE`: a relay operation is not allowed in the relay's current state.
 * - `WAL_UNAVAILABLE`: `transport: 'wal'` was asked of a database that cannot do it (not
 *   PostgreSQL, PGlite, `wal_level` not `logical`, no replication permission, a backend without a
 *   replication client); the message says what to change.
 */
export type OutboxErrorCode =
  | 'NOT_IN_TRANSACTION'
  | 'INVALID_MESSAGE'
  | 'INVALID_CONFIG'
  | 'TIMEOUT'
  | 'DATABASE'
  | 'BROKER'
  | 'RELAY_STATE'
  | 'WAL_UNAVAILABLE'

/** Options accepted by the {@link OutboxError} constructor. */
export interface OutboxErrorOptions {
  /**
   * The underlying error, if any.
   *
   * @defaultValue none
   */
  cause?: unknown
  /**
   * The adapter or component the error comes from, e.g. `'pg'`, `'kysely'`, `'relay'`.
   *
   * @defaultValue `'core'`
   */
  source?: string
}

/**
 * The one error type outboxkit throws. `code` is stable across releases; `message` is written for
 * people and is prefixed `[outboxkit] [source]`.
 *
 * @example
 * ```ts
 * try { await publish(outbox, client, msg) }
 * catch (err) { if (err instanceof OutboxError && err.code === 'NOT_IN_TRANSACTION') ... }
 * ```
 */
export class OutboxError extends Error {
  /** Stable machine-readable code. */
  readonly code: OutboxErrorCode
  /** The adapter or component that raised the error. */
  readonly source: string

  /**
   * @param code - a stable {@link OutboxErrorCode}
   * @param message - what was wrong and what to do about it (the prefix is added for you)
   * @param options - `cause` and `source` (defaults to `'core'`)
   */
  constructor(code: OutboxErrorCode, message: string, options: OutboxErrorOptions = {}) {
    const source = options.source ?? 'core'
    super(
      `[outboxkit] [${source}] ${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    )
    this.name = 'OutboxError'
    this.code = code
    this.source = source
  }
}

/**
 * True when `value` is an {@link OutboxError}, optionally with the given code. Works across
 * duplicated installs of `@outboxkit/core`, where `instanceof` would not.
 */
export function isOutboxError(value: unknown, code?: OutboxErrorCode): value is OutboxError {
  return (
    value instanceof Error &&
    value.name === 'OutboxError' &&
    typeof (value as OutboxError).code === 'string' &&
    (code === undefined || (value as OutboxError).code === code)
  )
}

const TIMEOUT_PATTERNS = [
  /query read timeout/i,
  /timeout exceeded when trying to connect/i,
  /connection timeout/i,
]

/**
 * Wraps a driver error in an {@link OutboxError}: client-side query timeouts and PostgreSQL's
 * `57014 query_canceled` (statement_timeout) become `'TIMEOUT'`, everything else `'DATABASE'`.
 * An {@link OutboxError} passes through unchanged.
 */
export function toOutboxError(error: unknown, source: string, doing: string): OutboxError {
  if (isOutboxError(error)) return error
  const err = error as { code?: unknown; message?: unknown } | undefined
  const text = typeof err?.message === 'string' ? err.message : String(error)
  if (err?.code === '57014' || err?.code === 'ETIMEDOUT' || TIMEOUT_PATTERNS.some((p) => p.test(text))) {
    return new OutboxError(
      'TIMEOUT',
      `${doing} timed out (${text}). The database did not answer in time: check that it is reachable and not locked, or raise the timeout.`,
      { cause: error, source },
    )
  }
  return new OutboxError('DATABASE', `${doing} failed: ${text}`, { cause: error, source })
}
