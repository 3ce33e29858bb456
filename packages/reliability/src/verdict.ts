import { quoteIdent } from '@outboxkit/core/adapter'
import type pg from 'pg'
import type { LedgerTables } from './ledger.js'

/**
 * What a run's tables prove, computed in SQL from the ledger (so it scales to a long soak).
 * The promise is `lost === 0`, `phantom === 0`, `unknown === 0`, `sameAttempt === 0` and
 * `unexplained === 0`; `duplicates` is reported and bounded by `explained`.
 */
export interface Verdict {
  /** Messages whose transaction committed (rows of `produced`). */
  committed: number
  /** Messages whose transaction rolled back. */
  rolledBack: number
  /** Distinct messages whose handler performed its side effect at least once. */
  delivered: number
  /** Committed messages never delivered. */
  lost: number
  /** Rolled-back messages that were delivered anyway. */
  phantom: number
  /** Delivered ids that were never produced at all (neither committed nor rolled back). */
  unknown: number
  /** Side effects beyond the first per message: the at-least-once cost. */
  duplicates: number
  /** Messages delivered more than once. */
  duplicatedMessages: number
  /** Side effects repeated for the same (message, attempt): a claim handled twice. Must be 0. */
  sameAttempt: number
  /** Side effects that may be repeated, by reason (`killed`, `lease-expired`, `fenced`, ...). */
  explained: Record<string, number>
  /** Repeated side effects not covered by an explanation. Must be 0. */
  unexplained: number
  /**
   * Attempts that ended without a side effect before a message's first one (injected failures,
   * Retries, claims lost in a kill before the handler wrote): `sum(first attempt - 1)`.
   */
  attemptsWithoutEffect: number
  /** Rows still `pending` or `processing` in the outbox. */
  live: number
  /** Rows dead-lettered. */
  dead: number
}

/** Computes the {@link Verdict} of a run from its tables. */
export async function computeVerdict(pool: pg.Pool, tables: LedgerTables, topic = 'work'): Promise<Verdict> {
  const t = {
    outbox: quoteIdent(tables.outbox),
    ledger: quoteIdent(tables.ledger),
    produced: quoteIdent(tables.produced),
    rolledBack: quoteIdent(tables.rolledBack),
    explained: quoteIdent(tables.explained),
  }
  const [row] = (
    await pool.query(
      `WITH l AS (SELECT * FROM ${t.ledger} WHERE topic = $1),
       r AS (
         SELECT l.id, NOT EXISTS (SELECT 1 FROM ${t.explained} e WHERE e.id = l.id AND e.attempt = l.attempt) AS bare
         FROM l)
       SELECT
         (SELECT count(*) FROM ${t.produced} WHERE topic = $1)::int AS committed,
         (SELECT count(*) FROM ${t.rolledBack})::int AS rolled_back,
         (SELECT count(DISTINCT id) FROM l)::int AS delivered,
         (SELECT count(*) FROM ${t.produced} p WHERE p.topic = $1 AND NOT EXISTS (SELECT 1 FROM l WHERE l.id = p.id))::int AS lost,
         (SELECT count(DISTINCT l.id) FROM l JOIN ${t.rolledBack} b ON b.id = l.id)::int AS phantom,
         (SELECT count(DISTINCT l.id) FROM l WHERE NOT EXISTS (SELECT 1 FROM ${t.produced} p WHERE p.id = l.id)
            AND NOT EXISTS (SELECT 1 FROM ${t.rolledBack} b WHERE b.id = l.id))::int AS unknown,
         ((SELECT count(*) FROM l) - (SELECT count(DISTINCT id) FROM l))::int AS duplicates,
         (SELECT count(*) FROM (SELECT id FROM l GROUP BY id HAVING count(*) > 1) x)::int AS duplicated_messages,
         (SELECT count(*) FROM (SELECT id, attempt FROM l GROUP BY id, attempt HAVING count(*) > 1) x)::int AS same_attempt,
         (SELECT COALESCE(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM r WHERE bare GROUP BY id HAVING count(*) > 1) x)::int AS unexplained,
         (SELECT COALESCE(sum(first - 1), 0) FROM (SELECT min(attempt) AS first FROM l GROUP BY id) x)::int AS without_effect,
         (SELECT count(*) FROM ${t.outbox} WHERE state IN ('pending', 'processing'))::int AS live,
         (SELECT count(*) FROM ${t.outbox} WHERE state = 'dead')::int AS dead,
         (SELECT COALESCE(json_object_agg(why, n), '{}') FROM (
            SELECT e.why, count(*)::int AS n FROM ${t.explained} e
            JOIN l ON l.id = e.id AND l.attempt = e.attempt GROUP BY e.why) x) AS explained`,
      [topic],
    )
  ).rows as Record<string, any>[]
  return {
    committed: row!.committed,
    rolledBack: row!.rolled_back,
    delivered: row!.delivered,
    lost: row!.lost,
    phantom: row!.phantom,
    unknown: row!.unknown,
    duplicates: row!.duplicates,
    duplicatedMessages: row!.duplicated_messages,
    sameAttempt: row!.same_attempt,
    explained: row!.explained as Record<string, number>,
    unexplained: row!.unexplained,
    attemptsWithoutEffect: row!.without_effect,
    live: row!.live,
    dead: row!.dead,
  }
}

/** Total of {@link Verdict.explained}: the most duplicates the run may show. */
export function explainedTotal(verdict: Verdict): number {
  return Object.values(verdict.explained).reduce((a, b) => a + b, 0)
}

/** The violated promises of a verdict, as sentences (empty: the run kept its promise). */
export function violations(verdict: Verdict, { allowDead = false } = {}): string[] {
  const out: string[] = []
  if (verdict.lost > 0) out.push(`${verdict.lost} committed messages were never delivered (lost)`)
  if (verdict.phantom > 0) out.push(`${verdict.phantom} rolled-back messages were delivered (phantom)`)
  if (verdict.unknown > 0) out.push(`${verdict.unknown} delivered ids were never produced`)
  if (verdict.sameAttempt > 0) out.push(`${verdict.sameAttempt} (message, attempt) pairs were handled twice`)
  if (verdict.unexplained > 0)
    out.push(`${verdict.unexplained} duplicates are not explained by a kill, a lease expiry or a fence`)
  if (verdict.duplicates > explainedTotal(verdict))
    out.push(`${verdict.duplicates} duplicates exceed the ${explainedTotal(verdict)} explained ones`)
  if (verdict.live > 0) out.push(`${verdict.live} rows are still pending or processing`)
  if (!allowDead && verdict.dead > 0) out.push(`${verdict.dead} rows were dead-lettered`)
  return out
}
