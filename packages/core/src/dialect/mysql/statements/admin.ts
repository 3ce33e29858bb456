import type { MysqlStatements } from '../statements.js'
import { count, EPOCH, epochMs, type MysqlTable, marks, memo, NOW, rowColumns } from './table.js'

/** The admin statements: purge, redrive, discard, stats, dead letters and blocked keys. */
export function mysqlAdminStatements(
  table: MysqlTable,
): Pick<
  MysqlStatements,
  'purge' | 'redrive' | 'discard' | 'stats' | 'listDead' | 'countDead' | 'blockedKeys'
> {
  const { t } = table
  const live = `state IN ('pending', 'processing')`
  const purge = memo(
    (states: number) =>
      `DELETE FROM ${t} WHERE state IN (${marks(states)}) AND available_at <= DATE_SUB(${NOW}, INTERVAL ? MICROSECOND)`,
  )
  const filters = (ids: number | undefined, topics: number | undefined) =>
    `${ids === undefined ? '' : ids === 0 ? ' AND FALSE' : ` AND id IN (${marks(ids)})`}${
      topics === undefined ? '' : topics === 0 ? ' AND FALSE' : ` AND topic IN (${marks(topics)})`
    }`
  const redrive = memo(
    (ids: number | undefined, topics: number | undefined) =>
      `UPDATE ${t} SET state = 'pending', attempts = 0, available_at = ${NOW} WHERE state = 'dead'${filters(ids, topics)}`,
  )
  const discard = memo(
    (ids: number | undefined, topics: number | undefined) =>
      `DELETE FROM ${t} WHERE state = 'dead'${filters(ids, topics)}`,
  )
  const stats = memo(
    (states: number) => `SELECT topic, state, COUNT(*) AS n,
  TIMESTAMPDIFF(MICROSECOND, MIN(created_at), ${NOW}) / 1000 AS oldest_age_ms,
  TIMESTAMPDIFF(MICROSECOND, MIN(CASE WHEN ${live} AND available_at <= ${NOW} THEN available_at END), ${NOW}) / 1000 AS oldest_due_lag_ms
FROM ${t} WHERE state IN (${marks(states)}) GROUP BY topic, state`,
  )
  // Paged by (death time truncated to the millisecond, id), newest first, like PostgreSQL.
  const deadMs = `FLOOR(TIMESTAMPDIFF(MICROSECOND, ${EPOCH}, available_at) / 1000)`
  // The search (four times the same text): an id, a key or topic, or a part of the last error.
  const search = (on: boolean) =>
    on ? ' AND (id = LOWER(?) OR `key` = ? OR topic = ? OR LOCATE(LOWER(?), LOWER(last_error)) > 0)' : ''
  const listDead = memo(
    (
      topics: number | undefined,
      after: boolean,
      limit: number,
      searched: boolean,
    ) => `SELECT ${rowColumns()}, ${deadMs} AS dead_ms
FROM ${t} WHERE state = 'dead'${filters(undefined, topics)}${search(searched)}${after ? ` AND (${deadMs} < ? OR (${deadMs} = ? AND id < ?))` : ''}
ORDER BY dead_ms DESC, id DESC LIMIT ${count(limit, 'limit')}`,
  )
  const countDead = memo(
    (topics: number | undefined, searched: boolean, cap: number) =>
      `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${t} WHERE state = 'dead'${filters(undefined, topics)}${search(searched)} LIMIT ${count(cap, 'cap')}) AS capped`,
  )
  const blockedKeys = memo(
    (
      continueAfterDead: number,
      topics: number | undefined,
      afterKey: boolean,
      includeRetrying: boolean,
      limit: number,
    ) => `WITH heads AS (
  SELECT \`key\`, key_hash, id, topic, state, attempts, last_error, seq,
    ${epochMs('available_at')} AS since_ms, ${epochMs('created_at')} AS created_ms,
    ROW_NUMBER() OVER (PARTITION BY key_hash ORDER BY seq) AS rn
  FROM ${t}
  WHERE key_hash IS NOT NULL AND state <> 'delivered'${
    continueAfterDead > 0 ? ` AND (state <> 'dead' OR topic NOT IN (${marks(continueAfterDead)}))` : ''
  }${afterKey ? ' AND `key` > ?' : ''}
)
SELECT h.\`key\`, h.id, h.topic, h.state, h.attempts, h.last_error, h.since_ms, h.created_ms,
  (SELECT COUNT(*) FROM ${t} AS w
   WHERE w.key_hash = h.key_hash AND w.seq > h.seq AND w.state IN ('pending', 'processing')) AS waiting
FROM heads AS h
WHERE h.rn = 1 AND (h.state = 'dead'${includeRetrying ? ` OR (h.state = 'pending' AND h.attempts > 0)` : ''})${
      topics === undefined ? '' : topics === 0 ? ' AND FALSE' : ` AND h.topic IN (${marks(topics)})`
    }
ORDER BY h.\`key\` LIMIT ${count(limit, 'limit')}`,
  )
  return {
    purge,
    redrive,
    discard,
    stats,
    listDead,
    countDead,
    blockedKeys: (o) => blockedKeys(o.continueAfterDead, o.topics, o.afterKey, o.includeRetrying, o.limit),
  }
}
