import { isOutboxError, OutboxError, toOutboxError } from '../../outbox/errors.js'

// How MySQL and MariaDB errors become OutboxErrors, and which ones a backend retries (deadlocks).

// Server errors that mean "did not answer in time": lock wait timeout, MariaDB max_statement_time,
// MySQL max_execution_time; and mysql2's own per-query timeout.
const MYSQL_TIMEOUT_ERRNOS = new Set([1205, 1969, 3024])
const MYSQL_TIMEOUT_CODES = new Set(['PROTOCOL_SEQUENCE_TIMEOUT', 'ETIMEDOUT', 'ER_LOCK_WAIT_TIMEOUT'])

/**
 * Wraps a MySQL driver error in an {@link OutboxError}: timeouts (a lock wait timeout,
 * `max_statement_time` / `max_execution_time`, the driver's per-query timeout) become
 * `'TIMEOUT'`, everything else `'DATABASE'` (see {@link toOutboxError}).
 */
export function toMysqlOutboxError(error: unknown, source: string, doing: string): OutboxError {
  if (isOutboxError(error)) return error
  const err = error as { errno?: unknown; code?: unknown; message?: unknown } | undefined
  if (
    (typeof err?.errno === 'number' && MYSQL_TIMEOUT_ERRNOS.has(err.errno)) ||
    (typeof err?.code === 'string' && MYSQL_TIMEOUT_CODES.has(err.code))
  ) {
    const text = typeof err?.message === 'string' ? err.message : String(error)
    return new OutboxError(
      'TIMEOUT',
      `${doing} timed out (${text}). The database did not answer in time: check that it is reachable and not locked, or raise the timeout.`,
      { cause: error, source },
    )
  }
  return toOutboxError(error, source, doing)
}

/** MySQL's `ER_LOCK_DEADLOCK` (SQLSTATE 40001): InnoDB chose the transaction as a deadlock victim and rolled it back whole. */
const ER_LOCK_DEADLOCK = 1213

/**
 * How many times {@link createMysqlBackend} runs one of its transactions (or autocommit
 * statements) that InnoDB chose as a deadlock victim, before the error surfaces: the first run
 * and up to four retries, after a jittered backoff of about 5-10, 10-20, 20-40 and 40-80 ms.
 */
export const MYSQL_DEADLOCK_ATTEMPTS = 5

/** True for a deadlock error of the server (`ER_LOCK_DEADLOCK`, errno 1213). */
export function isMysqlDeadlock(error: unknown): boolean {
  const err = error as { errno?: unknown; code?: unknown } | null | undefined
  return err?.errno === ER_LOCK_DEADLOCK || err?.code === 'ER_LOCK_DEADLOCK'
}

/** The pause before retry `n` (1-based) of a deadlocked transaction: 5·2^(n-1) ms to twice that. */
export function deadlockBackoffMs(n: number): number {
  const ceiling = 10 * 2 ** (n - 1)
  return ceiling / 2 + Math.random() * (ceiling / 2)
}
