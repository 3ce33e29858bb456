import type { LedgerSql } from './ledger-sql.js'

/**
 * The one-row verdict of {@link LedgerSql} (`verdict`, without `explained`; $1 topic): committed,
 * rolled back, delivered, lost, phantom, unknown, duplicates and the rest, each cast by `int`
 * to the dialect's integer.
 */
export function verdictSql(t: LedgerSql['t'], int: (expr: string) => string): string {
  return `WITH l AS (SELECT * FROM ${t.ledger} WHERE topic = $1),
       p AS (SELECT * FROM ${t.produced} WHERE topic = $1),
       r AS (
         SELECT l.id, NOT EXISTS (SELECT 1 FROM ${t.explained} e WHERE e.id = l.id AND e.attempt = l.attempt) AS bare
         FROM l)
       SELECT
         ${int('(SELECT count(*) FROM p)')} AS committed,
         ${int(`(SELECT count(*) FROM ${t.rolledBack})`)} AS rolled_back,
         ${int('(SELECT count(DISTINCT id) FROM l)')} AS delivered,
         ${int('(SELECT count(*) FROM p WHERE NOT EXISTS (SELECT 1 FROM l WHERE l.id = p.id))')} AS lost,
         ${int(`(SELECT count(DISTINCT l.id) FROM l JOIN ${t.rolledBack} b ON b.id = l.id)`)} AS phantom,
         ${int(`(SELECT count(DISTINCT l.id) FROM l WHERE NOT EXISTS (SELECT 1 FROM ${t.produced} x WHERE x.id = l.id)
            AND NOT EXISTS (SELECT 1 FROM ${t.rolledBack} b WHERE b.id = l.id))`)} AS unknown,
         ${int('(SELECT count(*) FROM l) - (SELECT count(DISTINCT id) FROM l)')} AS duplicates,
         ${int('(SELECT count(*) FROM (SELECT id FROM l GROUP BY id HAVING count(*) > 1) x)')} AS duplicated_messages,
         ${int('(SELECT count(*) FROM (SELECT id, attempt FROM l GROUP BY id, attempt HAVING count(*) > 1) x)')} AS same_attempt,
         ${int('(SELECT COALESCE(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM r WHERE bare GROUP BY id HAVING count(*) > 1) x)')} AS unexplained,
         ${int('(SELECT COALESCE(sum(first - 1), 0) FROM (SELECT min(attempt) AS first FROM l GROUP BY id) x)')} AS without_effect,
         ${int(`(SELECT count(*) FROM ${t.outbox} WHERE state IN ('pending', 'processing'))`)} AS live,
         ${int(`(SELECT count(*) FROM ${t.outbox} WHERE state = 'dead')`)} AS dead`
}
