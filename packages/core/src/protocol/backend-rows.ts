import type { BlockedKeyRow, ClaimedRow, DeadRow, OutboxState, StatsRow } from './backend.js'

// The claim and admin statements of the PostgreSQL and SQLite backends return the same snake_case columns;
// these turn one of their rows into the protocol's shape.

/** A row of a `stats` statement as a {@link StatsRow}. */
export function statsRowFrom(r: Record<string, unknown>): StatsRow {
  return {
    topic: r.topic as string,
    state: r.state as OutboxState,
    count: Number(r.n),
    oldestAgeMs: Math.max(0, Math.round(Number(r.oldest_age_ms))),
    oldestDueLagMs:
      r.oldest_due_lag_ms === null || r.oldest_due_lag_ms === undefined
        ? null
        : Math.max(0, Math.round(Number(r.oldest_due_lag_ms))),
  }
}

/** A row of a `listDead` statement as a {@link DeadRow}. */
export function deadRowFrom(r: Record<string, unknown>): DeadRow {
  return {
    id: r.id as string,
    topic: r.topic as string,
    key: (r.key as string | null) ?? null,
    payload: r.payload as string,
    headers: r.headers as string,
    attempts: Number(r.attempts),
    lastError: (r.last_error as string | null) ?? null,
    createdAtMs: Number(r.created_ms),
    deadAtMs: Number(r.dead_ms),
  }
}

/** A row of a `blockedKeys` statement as a {@link BlockedKeyRow}. */
export function blockedKeyRowFrom(r: Record<string, unknown>): BlockedKeyRow {
  return {
    key: r.key as string,
    headId: r.id as string,
    headTopic: r.topic as string,
    headState: r.state as 'dead' | 'pending',
    headAttempts: Number(r.attempts),
    headLastError: (r.last_error as string | null) ?? null,
    headSinceMs: Number(r.since_ms),
    headCreatedAtMs: Number(r.created_ms),
    waiting: Number(r.waiting),
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
