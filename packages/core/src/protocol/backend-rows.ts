import type {
  BlockedKeyRow,
  ClaimedRow,
  DeadRow,
  MessageRowFields,
  OutboxState,
  StatsRow,
} from './backend.js'

// The claim and admin statements of every backend (PostgreSQL, MySQL, SQLite) return the same
// snake_case columns; these turn one of their rows into the protocol's shape. Values are read
// whatever the driver's type for them: MySQL drivers may return numbers as strings (DECIMAL,
// BIGINT) and text as a Buffer.

/** A column as a number (drivers may return DECIMAL or BIGINT as a string). */
export const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v))
/** A column as text (a driver may return a Buffer). */
export const text = (v: unknown): string =>
  typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString('utf8') : String(v)
/** A nullable text column. */
export const textOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : text(v))
/** A boolean column as PostgreSQL (`true`, `'t'`), MySQL and SQLite (`1`, `'1'`, `1n`) return it. */
export const truthy = (v: unknown): boolean => v === true || v === 't' || v === 1 || v === '1' || v === 1n

/** A row of a `stats` statement as a {@link StatsRow}. */
export function statsRowFrom(r: Record<string, unknown>): StatsRow {
  return {
    topic: text(r.topic),
    state: text(r.state) as OutboxState,
    count: num(r.n),
    oldestAgeMs: Math.max(0, Math.round(num(r.oldest_age_ms))),
    oldestDueLagMs:
      r.oldest_due_lag_ms === null || r.oldest_due_lag_ms === undefined
        ? null
        : Math.max(0, Math.round(num(r.oldest_due_lag_ms))),
  }
}

/** The message fields of a `listDead` or MySQL claim row, read as text (see {@link MessageRowFields}). */
export function messageFieldsFrom(r: Record<string, unknown>): MessageRowFields {
  return {
    id: text(r.id),
    topic: text(r.topic),
    key: textOrNull(r.key),
    payload: text(r.payload),
    headers: text(r.headers),
  }
}

/** A row of a `listDead` statement as a {@link DeadRow}. */
export function deadRowFrom(r: Record<string, unknown>): DeadRow {
  return {
    ...messageFieldsFrom(r),
    attempts: num(r.attempts),
    lastError: textOrNull(r.last_error),
    createdAtMs: num(r.created_ms),
    deadAtMs: num(r.dead_ms),
  }
}

/** A row of a `blockedKeys` statement as a {@link BlockedKeyRow}. */
export function blockedKeyRowFrom(r: Record<string, unknown>): BlockedKeyRow {
  return {
    key: text(r.key),
    headId: text(r.id),
    headTopic: text(r.topic),
    headState: text(r.state) as 'dead' | 'pending',
    headAttempts: num(r.attempts),
    headLastError: textOrNull(r.last_error),
    headSinceMs: num(r.since_ms),
    headCreatedAtMs: num(r.created_ms),
    waiting: num(r.waiting),
  }
}

/**
 * A row of a claim statement as a {@link ClaimedRow}. `ordered` comes back as a boolean from
 * PostgreSQL drivers (`true`, or `'t'` as text) and as `1` from SQLite.
 */
export function claimedRowFrom(r: Record<string, unknown>): ClaimedRow {
  const row: { -readonly [K in keyof ClaimedRow]: ClaimedRow[K] } = {
    id: r.id as string,
    topic: r.topic as string,
    key: (r.key as string | null) ?? null,
    payload: r.payload as string,
    headers: r.headers as string,
    attempts: Number(r.attempts),
    createdAtMs: Number(r.created_ms),
    state: r.state as 'processing' | 'dead',
    lastError: (r.last_error as string | null) ?? null,
  }
  if (r.ordered === true || r.ordered === 't' || r.ordered === 1) row.ordered = true
  return row
}

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The search text of a dead-letter listing as an id when it is a UUID (lower case), else `null`. */
export function searchAsId(search: string | undefined): string | null {
  return search !== undefined && UUID_TEXT.test(search) ? search.toLowerCase() : null
}
