import type { SqliteStatements } from '../statements.js'
import { compile, LIVE, SQLITE_NOW_MS, type SqliteTable } from './table.js'

/** The admin statements: purge, redrive, discard, stats, dead-letter and blocked-key listings. */
export function sqliteAdminStatements(
  table: SqliteTable,
): Pick<
  SqliteStatements,
  'purge' | 'redrive' | 'stats' | 'listDead' | 'countDead' | 'discard' | 'blockedKeys'
> {
  const { t } = table
  const now = SQLITE_NOW_MS
  const live = LIVE
  const purge = compile(
    `DELETE FROM ${t} WHERE state IN (SELECT value FROM json_each(:states)) AND available_at <= ${now} - :older_than_ms`,
  )
  const filter = `(:ids IS NULL OR id IN (SELECT value FROM json_each(:ids))) AND (:topics IS NULL OR topic IN (SELECT value FROM json_each(:topics)))`
  const redrive = compile(
    `UPDATE ${t} SET state = 'pending', attempts = 0, available_at = ${now} WHERE state = 'dead' AND ${filter}`,
  )
  const discard = compile(`DELETE FROM ${t} WHERE state = 'dead' AND ${filter}`)
  // One branch per partial index (live rows, dead rows), so delivered rows are read only when asked.
  // Terminal groups are only counted (their ages are not read), from the dead index for dead rows.
  const liveStats = `SELECT topic, state, count(*) AS n,
  ${now} - min(created_at) AS oldest_age_ms,
  ${now} - min(CASE WHEN available_at <= ${now} THEN available_at END) AS oldest_due_lag_ms
FROM ${t} WHERE ${live} AND state IN (SELECT value FROM json_each(:states)) GROUP BY topic, state`
  const terminal = (
    state: string,
  ) => `SELECT topic, '${state}' AS state, count(*) AS n, 0 AS oldest_age_ms, NULL AS oldest_due_lag_ms
FROM ${t} WHERE state = '${state}' AND '${state}' IN (SELECT value FROM json_each(:states)) GROUP BY topic`
  const stats = compile([liveStats, terminal('dead'), terminal('delivered')].join('\nUNION ALL\n'))
  // Paged by (death time in ms, id), newest first: the cursor is the last row's (dead_ms, id).
  // The search: an id, a key or topic, or a part of the last error (ASCII case-insensitively).
  const search = `(:search IS NULL OR id = lower(:search) OR key = :search OR topic = :search OR instr(lower(last_error), lower(:search)) > 0)`
  const listDead = compile(`SELECT id, topic, key, payload, headers, attempts, last_error,
  created_at AS created_ms, available_at AS dead_ms
FROM ${t} WHERE state = 'dead' AND (:topics IS NULL OR topic IN (SELECT value FROM json_each(:topics))) AND ${search}
  AND (:after_ms IS NULL OR (available_at, id) < (:after_ms, :after_id))
ORDER BY available_at DESC, id DESC LIMIT :limit`)
  const countDead = compile(`SELECT count(*) AS n FROM (SELECT 1 FROM ${t}
  WHERE state = 'dead' AND (:topics IS NULL OR topic IN (SELECT value FROM json_each(:topics))) AND ${search} LIMIT :cap)`)
  const blockedKeys = compile(`WITH heads AS (
  SELECT key, id, topic, state, attempts, last_error, seq, available_at AS since_ms, created_at AS created_ms,
    row_number() OVER (PARTITION BY key ORDER BY seq) AS rn
  FROM ${t}
  WHERE seq IS NOT NULL AND state <> 'delivered'
    AND (state <> 'dead' OR topic NOT IN (SELECT value FROM json_each(:continue_topics)))
    AND (:after_key IS NULL OR key > :after_key)
)
SELECT h.key AS key, h.id AS id, h.topic AS topic, h.state AS state, h.attempts AS attempts, h.last_error AS last_error,
  h.since_ms AS since_ms, h.created_ms AS created_ms,
  (SELECT count(*) FROM ${t} AS w
   WHERE w.key = h.key AND w.seq > h.seq AND w.seq IS NOT NULL AND w.state <> 'delivered' AND w.${live}) AS waiting
FROM heads AS h
WHERE h.rn = 1 AND (h.state = 'dead' OR (:include_retrying AND h.state = 'pending' AND h.attempts > 0))
  AND (:topics IS NULL OR h.topic IN (SELECT value FROM json_each(:topics)))
ORDER BY h.key LIMIT :limit`)
  return { purge, redrive, stats, listDead, countDead, discard, blockedKeys }
}
