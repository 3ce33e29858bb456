import type { LedgerTables } from './ledger.js'
import type { LedgerDb } from './ledger-db.js'
import { ledgerSql } from './ledger-sql.js'

/**
 * Whether the deliveries of an ordered topic kept the commit order of each key, computed in SQL
 * from the ledger and the producers' per-key numbering (`ledger-key-order-sql.ts`). The promise
 * (docs/ordering.md) is `firstOutOfOrder === 0` and `startedAfterLater === 0`; lost and phantom
 * messages are the {@link Verdict}'s business.
 */
export interface KeyOrderVerdict {
  /** Keys with at least one committed message of the topic. */
  keys: number
  /** Committed keyed messages of the topic. */
  messages: number
  /** Messages of the topic delivered at least once. */
  firstDeliveries: number
  /** Messages first delivered after a message committed later in their key was first delivered. */
  firstOutOfOrder: number
  /** Deliveries (first or again) of a message after a later-committed message of its key had started. */
  startedAfterLater: number
}

/**
 * Computes the {@link KeyOrderVerdict} of `topic` from a run's tables, in raw SQL on `db`, never
 * through the code under test. PostgreSQL only (the producers number keyed messages only there).
 */
export async function computeKeyOrder(
  db: LedgerDb,
  tables: LedgerTables,
  topic: string,
): Promise<KeyOrderVerdict> {
  const sql = ledgerSql(db.dialect, tables).keyOrder
  if (sql === undefined)
    throw new Error(
      `[outboxkit] [reliability] the per-key commit order is kept on PostgreSQL only, not ${db.dialect}`,
    )
  const [row] = await db.query<Record<string, number>>(sql, [topic])
  const n = (k: string) => Number(row![k])
  return {
    keys: n('keys'),
    messages: n('messages'),
    firstDeliveries: n('first_deliveries'),
    firstOutOfOrder: n('first_out_of_order'),
    startedAfterLater: n('started_after_later'),
  }
}
