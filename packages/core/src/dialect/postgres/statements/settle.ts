import type { PostgresStatements } from '../statements.js'
import type { PostgresTable } from './table.js'

/** The fenced statements of a claimed row: settle (batched) and lease extension. */
export function postgresSettleStatements(
  table: PostgresTable,
): Pick<PostgresStatements, 'settle' | 'settleDelivered' | 'extendLease'> {
  const { t } = table
  // Settles and lease extensions find their rows by primary key (`o.id = ANY($1)`) and test the
  // fence (`state = 'processing' AND attempts = $claimed`) in a clause that also names the
  // settlement, never as a filter of the table alone. A filter on `state` alone is estimated from
  // the table's statistics, and statistics taken while every row was pending say "no row is
  // processing": the planner then expected one row, scanned the whole table and compared every
  // row with every settlement (23 s for a settle of 1 000 rows on a 100 000-row table; 4-6 ms
  // now, whatever the statistics; docs/performance.md#claim-plans-statistics-and-autovacuum).
  const fenced = (s: string) => `o.attempts = CASE WHEN o.state = 'processing' THEN ${s}.attempts END`
  const settle = `WITH s AS (
  SELECT * FROM unnest($1::uuid[], $2::int4[], $3::text[], $4::float8[], $5::text[]) AS s(id, attempts, outcome, delay_ms, error)
), del AS (
  DELETE FROM ${t} AS o USING s
  WHERE NOT $6::bool AND s.outcome = 'delivered' AND o.id = ANY($1::uuid[]) AND o.id = s.id AND ${fenced('s')}
  RETURNING o.id
), upd AS (
  UPDATE ${t} AS o SET
    state = CASE s.outcome WHEN 'retry' THEN 'pending' WHEN 'dead' THEN 'dead' ELSE 'delivered' END,
    available_at = CASE s.outcome WHEN 'retry' THEN now() + s.delay_ms * interval '1 millisecond' ELSE now() END,
    last_error = CASE s.outcome WHEN 'delivered' THEN o.last_error ELSE s.error END
  FROM s
  WHERE ($6::bool OR s.outcome <> 'delivered') AND o.id = ANY($1::uuid[]) AND o.id = s.id AND ${fenced('s')}
  RETURNING o.id
)
SELECT s.id::text AS id FROM s WHERE s.id NOT IN (SELECT id FROM del UNION ALL SELECT id FROM upd)`
  // Returning the few ids that did not apply, not the many that did, spares the client a row per
  // message. The (id, attempts) pairs are tested with a hashed subplan (`IS TRUE` keeps the
  // planner from turning it into a join it would plan from the same statistics).
  const settleDelivered = `WITH del AS (
  DELETE FROM ${t} AS o
  WHERE o.id = ANY($1::uuid[]) AND o.state = 'processing'
    AND ((o.id, o.attempts) IN (SELECT * FROM unnest($1::uuid[], $2::int4[]))) IS TRUE
  RETURNING o.id
)
SELECT s.id::text AS id FROM unnest($1::uuid[]) AS s(id) WHERE s.id NOT IN (SELECT id FROM del)`
  const extendLease = `UPDATE ${t} AS o SET available_at = now() + $3::float8 * interval '1 millisecond'
FROM unnest($1::uuid[], $2::int4[]) AS s(id, attempts)
WHERE o.id = ANY($1::uuid[]) AND o.id = s.id AND ${fenced('s')}
RETURNING o.id::text AS id`
  return { settle, settleDelivered, extendLease }
}
