import type { MysqlStatements } from '../statements.js'
import { count, later, type MysqlTable, marks, memo, NOW } from './table.js'

/** The fenced statements of claimed rows: the fence read, settles and lease extensions. */
export function mysqlSettleStatements(
  table: MysqlTable,
): Pick<MysqlStatements, 'lockProcessing' | 'deleteIds' | 'settleUpdate' | 'extendLease'> {
  const { t } = table
  const lockProcessing = memo(
    (n: number) =>
      `SELECT id, attempts FROM ${t} WHERE id IN (${marks(n)}) AND state = 'processing' ORDER BY id FOR UPDATE`,
  )
  const deleteIds = memo((n: number) => `DELETE FROM ${t} WHERE id IN (${marks(n)})`)
  const settleUpdate = memo((n: number) => {
    const whens = Array(count(n, 'n')).fill('WHEN ? THEN ?').join(' ')
    return `UPDATE ${t} SET
  state = CASE id ${whens} END,
  available_at = DATE_ADD(${NOW}, INTERVAL (CASE id ${whens} END) MICROSECOND),
  last_error = COALESCE(CASE id ${whens} END, last_error)
WHERE id IN (${marks(n)})`
  })
  const extendLease = memo(
    (n: number) => `UPDATE ${t} SET available_at = ${later('?')} WHERE id IN (${marks(n)})`,
  )
  return {
    lockProcessing,
    deleteIds,
    settleUpdate,
    extendLease,
  }
}
