import type { MysqlStatements } from '../statements.js'
import { count, later, type MysqlTable, marks, memo, NOW, quoteMysqlIdent, rowColumns } from './table.js'

/** The claim statements: the locking read of due rows, then their move to processing or dead. */
export function mysqlClaimStatements(
  table: MysqlTable,
): Pick<MysqlStatements, 'claimSelect' | 'claimProcessing' | 'claimDead'> {
  const { t, names } = table
  const q = quoteMysqlIdent
  const claimSelect = memo((topics: number, limit: number, continueAfterDead: number) => {
    count(limit, 'limit')
    const ordered = continueAfterDead >= 0
    // The head-of-key check reads the same table in a subquery: a locking clause of the outer
    // query does not lock (or skip) rows read by a subquery, so a predecessor locked by another
    // claim still counts; READ COMMITTED makes it see the latest committed state.
    const head = ordered
      ? `
  AND (c.seq IS NULL OR NOT EXISTS (
    SELECT 1 FROM ${t} AS p
    WHERE p.key_hash = c.key_hash AND p.seq < c.seq AND p.state <> 'delivered'${
      continueAfterDead > 0 ? ` AND (p.state <> 'dead' OR p.topic NOT IN (${marks(continueAfterDead)}))` : ''
    }
  ))`
      : ''
    return `SELECT ${rowColumns('c.')}${ordered ? ', c.seq IS NOT NULL AS ordered' : ''}
FROM ${t} AS c FORCE INDEX (${q(names.due)})
WHERE c.due_at <= ${NOW} AND c.topic IN (${marks(topics)})${head}
ORDER BY c.due_at, c.id
LIMIT ${limit}
FOR UPDATE SKIP LOCKED`
  })
  const claimProcessing = memo(
    (n: number) =>
      `UPDATE ${t} SET state = 'processing', attempts = attempts + 1, available_at = ${later('?')} WHERE id IN (${marks(n)})`,
  )
  const claimDead = memo(
    (n: number) => `UPDATE ${t} SET state = 'dead', available_at = ${NOW},
  last_error = CONCAT('lease expired after attempt ', attempts, ' of ', ?, ' without a result (the relay crashed or the handler hung)',
    COALESCE(CONCAT('; previous error: ', last_error), ''))
WHERE id IN (${marks(n)})`,
  )
  return {
    claimSelect: (topics, limit, continueAfterDead) => claimSelect(topics, limit, continueAfterDead ?? -1),
    claimProcessing,
    claimDead,
  }
}
