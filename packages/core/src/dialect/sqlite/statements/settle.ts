import type { SqliteStatements } from '../statements.js'
import { compile, SQLITE_NOW_MS, type SqliteTable } from './table.js'

/** The fenced statements of claimed rows: settles and lease extensions. */
export function sqliteSettleStatements(
  table: SqliteTable,
): Pick<SqliteStatements, 'settleDelete' | 'settleUpdate' | 'extendLease'> {
  const { t } = table
  const now = SQLITE_NOW_MS
  const settlements = `SELECT json_extract(s.value, '$[0]') AS id, json_extract(s.value, '$[1]') AS attempts,
    json_extract(s.value, '$[2]') AS outcome, json_extract(s.value, '$[3]') AS delay_ms, json_extract(s.value, '$[4]') AS error
  FROM json_each(:settlements) AS s`
  // rowid IN (a join that looks every settled id up by primary key): never a scan of the table.
  const settleDelete = compile(`DELETE FROM ${t} WHERE rowid IN (
  SELECT o.rowid FROM (${settlements}) AS s JOIN ${t} AS o ON o.id = s.id
  WHERE s.outcome = 'delivered' AND o.attempts = s.attempts AND o.state = 'processing'
)
RETURNING id`)
  const settleUpdate = compile(`UPDATE ${t} AS o SET
  state = CASE s.outcome WHEN 'retry' THEN 'pending' WHEN 'dead' THEN 'dead' ELSE 'delivered' END,
  available_at = CASE s.outcome WHEN 'retry' THEN ${now} + s.delay_ms ELSE ${now} END,
  last_error = CASE s.outcome WHEN 'delivered' THEN o.last_error ELSE s.error END
FROM (${settlements}) AS s
WHERE o.id = s.id AND o.attempts = s.attempts AND o.state = 'processing' AND (:keep_delivered OR s.outcome <> 'delivered')
RETURNING id`)
  const extendLease = compile(`UPDATE ${t} AS o SET available_at = ${now} + :lease_ms
FROM (SELECT json_extract(r.value, '$[0]') AS id, json_extract(r.value, '$[1]') AS attempts FROM json_each(:rows) AS r) AS s
WHERE o.id = s.id AND o.attempts = s.attempts AND o.state = 'processing'
RETURNING id`)
  return { settleDelete, settleUpdate, extendLease }
}
