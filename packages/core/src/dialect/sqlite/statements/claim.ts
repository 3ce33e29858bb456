import type { SqliteStatements } from '../statements.js'
import { compile, LIVE, SQLITE_NOW_MS, type SqliteSql, type SqliteTable } from './table.js'

/** The claim statements: due rows to `processing` with a lease, or dead past max attempts. */
export function sqliteClaimStatements(table: SqliteTable): Pick<SqliteStatements, 'claim' | 'claimOrdered'> {
  const { t } = table
  const now = SQLITE_NOW_MS
  const live = LIVE
  // The head-of-key check for ordered rows: no row of the same key with a smaller seq that is
  // still to deliver (pending, processing) or dead (unless its topic lets a dead head be skipped).
  // Served by the partial (key, seq) index. The IN subquery is evaluated before the UPDATE writes,
  // so a claim that takes a head cannot take its successor in the same statement.
  const claimSql = (ordered: boolean): SqliteSql =>
    compile(`UPDATE ${t} AS o SET
  state = CASE WHEN o.attempts >= :max_attempts THEN 'dead' ELSE 'processing' END,
  attempts = CASE WHEN o.attempts >= :max_attempts THEN o.attempts ELSE o.attempts + 1 END,
  available_at = CASE WHEN o.attempts >= :max_attempts THEN ${now} ELSE ${now} + :lease_ms END,
  last_error = CASE WHEN o.attempts >= :max_attempts
    THEN 'lease expired after attempt ' || o.attempts || ' of ' || :max_attempts || ' without a result (the relay crashed or the handler hung)'
      || COALESCE('; previous error: ' || o.last_error, '')
    ELSE o.last_error END
WHERE o.id IN (
  SELECT c.id FROM ${t} AS c
  WHERE c.${live} AND c.available_at <= ${now} AND c.topic IN (SELECT value FROM json_each(:topics))${
    ordered
      ? `
    AND (c.seq IS NULL OR NOT EXISTS (
      SELECT 1 FROM ${t} AS p
      WHERE p.key = c.key AND p.seq < c.seq AND p.seq IS NOT NULL AND p.state <> 'delivered'
        AND (p.state <> 'dead' OR p.topic NOT IN (SELECT value FROM json_each(:continue_topics)))
    ))`
      : ''
  }
  ORDER BY c.available_at, c.id
  LIMIT :limit
)
RETURNING id, topic, key, payload, headers, attempts, state, created_at AS created_ms, last_error${
      ordered ? ', seq IS NOT NULL AS ordered' : ''
    }`)
  return { claim: claimSql(false), claimOrdered: claimSql(true) }
}
