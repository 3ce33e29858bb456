import type { TableRef } from '../../../outbox/define-outbox.js'
import { qualifiedTable } from '../../sql-identifiers.js'
import { postgresTable } from '../statements/table.js'
import { type PostgresWalStatements, postgresWalStatements } from '../statements/wal.js'
import { type WalNames, walNames } from './names.js'

/** The WAL names and statements of one table. */
export interface WalStatementsOf {
  readonly names: WalNames
  readonly sql: PostgresWalStatements
}

const cache = new Map<string, WalStatementsOf>()

/**
 * The WAL names and statements of `table`, built once per table and process: a WAL publish reads
 * them on every call, like the table's statements (`postgresStatements`, cached the same way).
 */
export function walStatementsOf(table: TableRef): WalStatementsOf {
  const key = `${table.schema ?? ''}.${table.name}`
  let hit = cache.get(key)
  if (!hit) {
    const names = walNames(table)
    const mark = qualifiedTable({ ...table, name: names.markTable })
    hit = { names, sql: postgresWalStatements(postgresTable(table), names.slot, mark) }
    cache.set(key, hit)
  }
  return hit
}
