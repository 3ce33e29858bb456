import type { PostgresStatements } from '../statements.js'
import type { PostgresTable } from './table.js'

/** The claim statements: due rows to `processing` with a lease, or dead past max attempts. */
export function postgresClaimStatements(
  table: PostgresTable,
): Pick<PostgresStatements, 'claim' | 'claimOrdered'> {
  const { t, live } = table
  // The head-of-key check for ordered rows: no row of the same key with a smaller seq that is
  // still to deliver (pending, processing) or dead (unless its topic lets a dead head be skipped).
  // Served by the partial (key, seq) index: one short index probe per candidate.
  //
  // The due rows are chosen (and locked) by a subquery that PostgreSQL runs once as an InitPlan;
  // the UPDATE then finds them by primary key (`id = ANY(ARRAY(...))`), whatever the statistics
  // say. Joining a CTE instead let the planner pick a hash join over a sequential scan of the whole
  // table (docs/performance.md#claim-plans-statistics-and-autovacuum).
  const claimSql = (ordered: boolean) => `UPDATE ${t} AS o SET
  state = CASE WHEN o.attempts >= $4 THEN 'dead' ELSE 'processing' END,
  attempts = CASE WHEN o.attempts >= $4 THEN o.attempts ELSE o.attempts + 1 END,
  available_at = CASE WHEN o.attempts >= $4 THEN now() ELSE now() + $3::float8 * interval '1 millisecond' END,
  last_error = CASE WHEN o.attempts >= $4
    THEN 'lease expired after attempt ' || o.attempts || ' of ' || $4 || ' without a result (the relay crashed or the handler hung)'
      || COALESCE('; previous error: ' || o.last_error, '')
    ELSE o.last_error END
WHERE o.id = ANY(ARRAY(
  SELECT ${ordered ? 'c.' : ''}id FROM ${t}${ordered ? ' AS c' : ''}
  WHERE ${live} AND available_at <= now() AND topic = ANY($1::text[])${
    ordered
      ? `
    AND (c.seq IS NULL OR NOT EXISTS (
      SELECT 1 FROM ${t} AS p
      WHERE p.key = c.key AND p.seq < c.seq AND p.seq IS NOT NULL AND p.state <> 'delivered'
        AND (p.state <> 'dead' OR p.topic <> ALL($5::text[]))
    ))`
      : ''
  }
  ORDER BY available_at, id
  LIMIT $2
  FOR UPDATE${ordered ? ' OF c' : ''} SKIP LOCKED
))
RETURNING o.id::text AS id, o.topic, o.key, o.payload::text AS payload, o.headers::text AS headers, o.attempts,
  o.state, (extract(epoch FROM o.created_at) * 1000)::float8 AS created_ms, o.last_error${ordered ? ', o.seq IS NOT NULL AS ordered' : ''}`
  const claim = claimSql(false)
  const claimOrdered = claimSql(true)
  return { claim, claimOrdered }
}
