import type { TableRef } from '../../../outbox/define-outbox.js'
import { type OutboxIndexNames, outboxIndexNames, qualifiedTable, quoteIdent } from '../../sql-identifiers.js'

/** What every PostgreSQL statement builder needs to know about one outbox table. */
export interface PostgresTable {
  /** The quoted, qualified table. */
  readonly t: string
  /** `schema.table` as a cache key (schema empty for the search_path). */
  readonly cacheKey: string
  /** The index names. */
  readonly indexes: OutboxIndexNames
  /** The quoted, qualified sequence that numbers messages of ordered topics. */
  readonly sequence: string
  /** The condition of a row still to deliver. */
  readonly live: string
}

/** The names and quoted forms of `table` for the statement builders. */
export function postgresTable(table: TableRef): PostgresTable {
  const indexes = outboxIndexNames(table)
  return {
    t: qualifiedTable(table),
    cacheKey: `${table.schema ?? ''}.${table.name}`,
    indexes,
    sequence: table.schema
      ? `${quoteIdent(table.schema)}.${quoteIdent(indexes.sequence)}`
      : quoteIdent(indexes.sequence),
    live: `state IN ('pending', 'processing')`,
  }
}

/** `value` as a single-quoted SQL string literal. */
export function literal(value: string): string {
  return `'${value.replace(/'/g, "''")}'`
}
