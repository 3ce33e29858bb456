import type { PostgresStatements } from '../statements.js'
import type { PostgresTable } from './table.js'

/** The admin statements: purge, redrive, stats, dead letters and blocked keys. */
export function postgresAdminStatements(
  table: PostgresTable,
): Pick<
  PostgresStatements,
  'purge' | 'redrive' | 'stats' | 'listDead' | 'countDead' | 'discard' | 'blockedKeys'
> {
  const { t, live } = table
  const purge = `DELETE FROM ${t} WHERE state = ANY($1::text[]) AND available_at <= now() - $2::float8 * interval '1 millisecond'`
  const redrive = `UPDATE ${t} SET state = 'pending', attempts = 0, available_at = now()
WHERE state = 'dead' AND ($1::uuid[] IS NULL OR id = ANY($1::uuid[])) AND ($2::text[] IS NULL OR topic = ANY($2::text[]))`
  // One branch per partial index (live rows by the due index, dead rows by the dead index), so
  // the delivered rows are read only when $1 asks for them.
  // the delivered rows are read only when $1 asks for them. Terminal groups are only counted
  // (their ages are not read), so the dead branch is an index-only scan of the dead index.
  const liveStats = `SELECT topic, state, count(*)::int AS n,
  (extract(epoch FROM now() - min(created_at)) * 1000)::float8 AS oldest_age_ms,
  (extract(epoch FROM now() - min(available_at) FILTER (WHERE available_at <= now())) * 1000)::float8 AS oldest_due_lag_ms
FROM ${t} WHERE ${live} AND state = ANY($1::text[]) GROUP BY topic, state`
  const terminal = (
    state: string,
  ) => `SELECT topic, '${state}' AS state, count(*)::int AS n, 0::float8 AS oldest_age_ms, NULL::float8 AS oldest_due_lag_ms
FROM ${t} WHERE state = '${state}' AND '${state}' = ANY($1::text[]) GROUP BY topic`
  const stats = [liveStats, terminal('dead'), terminal('delivered')].join('\nUNION ALL\n')
  // Paged by (death time truncated to the millisecond, id), newest first: the cursor is the
  // last row's (dead_ms, id) exactly as returned, so no row is skipped or repeated between pages.
  const deadMs = 'floor(extract(epoch FROM available_at) * 1000)'
  // The search ($n text, $n+1 the same text as a uuid when it is one): an id, a key or topic, or a
  // part of the last error. It reads dead rows only, as the rest of the WHERE does.
  const search = (n: number) =>
    `($${n}::text IS NULL OR id = $${n + 1}::uuid OR key = $${n}::text OR topic = $${n}::text OR strpos(lower(last_error), lower($${n}::text)) > 0)`
  const deadWhere = `state = 'dead' AND ($1::text[] IS NULL OR topic = ANY($1::text[])) AND ${search(5)}
  AND ($3::float8 IS NULL OR (available_at < to_timestamp(($3::float8 + 1) / 1000) AND (${deadMs}, id) < ($3::float8::numeric, $4::uuid)))`
  // The page's rows are among the newest: `edge` walks the dead index (available_at, topic)
  // backwards to the $2-th match, and the page is sorted from the rows of that millisecond on,
  // instead of sorting every dead row (exact: a row before that millisecond has $2 rows before it).
  const listDead = `WITH edge AS (
  SELECT available_at FROM ${t} WHERE ${deadWhere} ORDER BY available_at DESC OFFSET ($2::int - 1) LIMIT 1
)
SELECT id::text AS id, topic, key, payload::text AS payload, headers::text AS headers, attempts, last_error,
  (extract(epoch FROM created_at) * 1000)::float8 AS created_ms, ${deadMs}::float8 AS dead_ms
FROM ${t} WHERE ${deadWhere}
  AND available_at >= coalesce(date_trunc('milliseconds', (SELECT available_at FROM edge) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', '-infinity')
ORDER BY ${deadMs} DESC, id DESC LIMIT $2`
  const countDead = `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${t}
  WHERE state = 'dead' AND ($1::text[] IS NULL OR topic = ANY($1::text[])) AND ${search(3)} LIMIT $2) AS capped`
  const discard = `DELETE FROM ${t}
WHERE state = 'dead' AND ($1::uuid[] IS NULL OR id = ANY($1::uuid[])) AND ($2::text[] IS NULL OR topic = ANY($2::text[]))`
  const blockedKeys = `WITH heads AS (
  SELECT DISTINCT ON (key) key, id, topic, state, attempts, last_error, seq,
    (extract(epoch FROM available_at) * 1000)::float8 AS since_ms, (extract(epoch FROM created_at) * 1000)::float8 AS created_ms
  FROM ${t}
  WHERE seq IS NOT NULL AND state <> 'delivered' AND (state <> 'dead' OR topic <> ALL($1::text[]))
    AND ($3::text IS NULL OR key > $3::text)
  ORDER BY key, seq
)
SELECT h.key, h.id::text AS id, h.topic, h.state, h.attempts, h.last_error, h.since_ms, h.created_ms,
  (SELECT count(*) FROM ${t} AS w
   WHERE w.key = h.key AND w.seq > h.seq AND w.seq IS NOT NULL AND w.state IN ('pending', 'processing'))::int AS waiting
FROM heads AS h
WHERE (h.state = 'dead' OR ($5::bool AND h.state = 'pending' AND h.attempts > 0))
  AND ($2::text[] IS NULL OR h.topic = ANY($2::text[]))
ORDER BY h.key LIMIT $4`
  return { purge, redrive, stats, listDead, countDead, discard, blockedKeys }
}
