import type { OutboxDialect } from '@outboxkit/core'
import type { IndexInfo, InspectFn } from './types.js'

/** What differs between the dialects in the suites' raw SQL. */
export interface DialectParts {
  dialect: OutboxDialect
  param(n: number): string
  ident(name: string): string
  /** SELECT list of {@link OutboxRowRead} (without FROM). */
  rowColumns: string
  countExpr: string
  /** `available_at`/`created_at` value `now + <param> ms`. */
  nowPlusMs(param: string): string
  jsonParam(param: string): string
  nowMsSql: string
  indexes(table: string, inspect: InspectFn): Promise<IndexInfo[]>
  availableAtOf(table: string, p: string): string
}
