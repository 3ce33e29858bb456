import type { MysqlStatements } from '../statements.js'
import { mysqlDeadLetterStatements } from './dead-letters.js'
import { idTopicFilters, type MysqlTable, marks, memo, NOW } from './table.js'

/** The admin statements: purge, redrive, discard, stats, and those of {@link mysqlDeadLetterStatements}. */
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
  const redrive = memo(
    (ids: number | undefined, topics: number | undefined) =>
      `UPDATE ${t} SET state = 'pending', attempts = 0, available_at = ${NOW} WHERE state = 'dead'${idTopicFilters(ids, topics)}`,
  )
  const discard = memo(
    (ids: number | undefined, topics: number | undefined) =>
      `DELETE FROM ${t} WHERE state = 'dead'${idTopicFilters(ids, topics)}`,
  )
  const stats = memo(
    (states: number) => `SELECT topic, state, COUNT(*) AS n,
  TIMESTAMPDIFF(MICROSECOND, MIN(created_at), ${NOW}) / 1000 AS oldest_age_ms,
  TIMESTAMPDIFF(MICROSECOND, MIN(CASE WHEN ${live} AND available_at <= ${NOW} THEN available_at END), ${NOW}) / 1000 AS oldest_due_lag_ms
FROM ${t} WHERE state IN (${marks(states)}) GROUP BY topic, state`,
  )
  return { purge, redrive, discard, stats, ...mysqlDeadLetterStatements(table) }
}
