import type { TableRef } from '../../../outbox/define-outbox.js'
import { type OutboxIndexNames, outboxIndexNames, qualifiedTable, quoteIdent } from '../../sql-identifiers.js'

// Names and SQL helpers every SQLite statement builder shares.

/**
 * SQLite's own clock in epoch milliseconds, as an SQL expression. `'now'` is the same for every
 * use within one statement, so all the timestamps a statement writes agree. Works on every SQLite
 * version (no `unixepoch('subsec')`, which needs 3.42).
 */
export const SQLITE_NOW_MS = `CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)`

/**
 * One SQLite statement with positional `?` parameters (the one placeholder every SQLite driver
 * understands) and the name of the argument each `?` takes, in order. Bind with {@link bindSqlite}.
 */
export interface SqliteSql {
  /** SQL text with `?` placeholders. */
  readonly sql: string
  /** The argument name of each placeholder, in order (a name may repeat). */
  readonly params: readonly string[]
}

/** Compiles SQL written with `:name` placeholders into a {@link SqliteSql} with `?` placeholders. */
export function compile(text: string): SqliteSql {
  const params: string[] = []
  const sql = text.replace(/:([a-z][a-z_]*)\b/g, (_m, name: string) => {
    params.push(name)
    return '?'
  })
  return { sql, params }
}

/**
 * The positional parameters of `statement` from named `args`. Booleans become 1 / 0 and
 * `undefined` becomes `null` (SQLite drivers bind neither).
 *
 * @throws Error when an argument the statement needs is missing (a bug in the caller).
 */
export function bindSqlite(statement: SqliteSql, args: Readonly<Record<string, unknown>>): unknown[] {
  return statement.params.map((name) => {
    if (!(name in args)) throw new Error(`[outboxkit] [core] SQLite statement argument :${name} is missing`)
    const v = args[name]
    return v === undefined ? null : typeof v === 'boolean' ? (v ? 1 : 0) : v
  })
}

/** What every SQLite statement builder needs to know about one outbox table. */
export interface SqliteTable {
  /** The quoted, qualified table. */
  readonly t: string
  /** The quoted table name alone (an index's `ON` names a table of the index's own database). */
  readonly bare: string
  /** The index names. */
  readonly indexes: OutboxIndexNames
  /** The quoted index name `name`, qualified by the table's database when it names one. */
  index(name: string): string
}

/** The names and quoted forms of `table` for the statement builders. */
export function sqliteTable(table: TableRef): SqliteTable {
  return {
    t: qualifiedTable(table),
    bare: quoteIdent(table.name),
    indexes: outboxIndexNames(table),
    // SQLite names an index in the table's database: `"schema"."index" ON "table"`.
    index: (name: string) =>
      table.schema ? `${quoteIdent(table.schema)}.${quoteIdent(name)}` : quoteIdent(name),
  }
}

/** The condition of a row still to deliver. */
export const LIVE = `state IN ('pending', 'processing')`
