import { OutboxError, type TableRef } from '@outboxkit/core'
import { formatValue, parseTableName } from '@outboxkit/core/adapter'

/** What the table functions take: a table name as in `defineOutbox({ table })`, or the outbox itself. */
export type OutboxTableSource = string | { readonly table: TableRef }

/**
 * The validated table of `table` (a name like `'outbox'` or `'app.outbox'`, or an outbox).
 *
 * @param fn - the calling function's name, for the error message
 * @throws OutboxError `INVALID_CONFIG` for a name `defineOutbox` would refuse.
 */
export function tableRef(table: unknown, fn = 'outboxTable'): TableRef {
  if (typeof table === 'string') return parseTableName(table)
  const ref = (table as { table?: TableRef } | null | undefined)?.table
  if (ref && typeof ref === 'object' && typeof ref.name === 'string') return parseTableName(ref.display)
  throw new OutboxError(
    'INVALID_CONFIG',
    `${fn} needs a table name like 'outbox' or 'app.outbox', or the outbox from defineOutbox, got ${formatValue(table)}.`,
    { source: 'drizzle' },
  )
}
