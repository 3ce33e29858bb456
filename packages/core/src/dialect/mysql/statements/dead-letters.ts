import type { MysqlStatements } from '../statements.js'
import { count, EPOCH, epochMs, idTopicFilters, type MysqlTable, marks, memo, rowColumns } from './table.js'

/** The dead letters' statements: the paged, searchable listing, its count, and the blocked keys. */
export function mysqlDeadLetterStatements(
  table: MysqlTable,
): Pick<MysqlStatements, 'listDead' | 'countDead' | 'blockedKeys'> {
  const { t } = table
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
FROM ${t} WHERE state = 'dead'${idTopicFilters(undefined, topics)}${search(searched)}${after ? ` AND (${deadMs} < ? OR (${deadMs} = ? AND id < ?))` : ''}
ORDER BY dead_ms DESC, id DESC LIMIT ${count(limit, 'limit')}`,
  )
  const countDead = memo(
    (topics: number | undefined, searched: boolean, cap: number) =>
      `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${t} WHERE state = 'dead'${idTopicFilters(undefined, topics)}${search(searched)} LIMIT ${count(cap, 'cap')}) AS capped`,
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
    listDead,
    countDead,
    blockedKeys: (o) => blockedKeys(o.continueAfterDead, o.topics, o.afterKey, o.includeRetrying, o.limit),
  }
}
