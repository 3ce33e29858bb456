import type { LedgerTables } from './ledger.js'
import type { LedgerDb } from './ledger-db.js'
import { ledgerSql } from './ledger-sql.js'

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

/**
 * Computes the {@link Verdict} of a run from its tables, in raw SQL on `db` (the dialect's
 * statements are in `ledger-sql.ts`), never through the code under test.
 */
export async function computeVerdict(db: LedgerDb, tables: LedgerTables, topic = 'work'): Promise<Verdict> {
  const statements = ledgerSql(db.dialect, tables)
  const [row] = await db.query<Record<string, number | string>>(statements.verdict, [topic])
  const reasons = await db.query<{ why: string; n: number | string }>(statements.explainedByReason, [topic])
  const n = (k: string) => Number(row![k])
  return {
    committed: n('committed'),
    rolledBack: n('rolled_back'),
    delivered: n('delivered'),
    lost: n('lost'),
    phantom: n('phantom'),
    unknown: n('unknown'),
    duplicates: n('duplicates'),
    duplicatedMessages: n('duplicated_messages'),
    sameAttempt: n('same_attempt'),
    explained: Object.fromEntries(reasons.map((r) => [r.why, Number(r.n)])),
    unexplained: n('unexplained'),
    attemptsWithoutEffect: n('without_effect'),
    live: n('live'),
    dead: n('dead'),
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
