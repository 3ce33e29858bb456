import type { OutboxDialect } from '@outboxkit/core'
import type { DialectParts } from './dialect-sql/dialect-parts.js'
import { insertSeeds } from './dialect-sql/insert.js'
import { mysql } from './dialect-sql/mysql.js'
import { postgres } from './dialect-sql/postgres.js'
import { normalizeRow, num, whereOf } from './dialect-sql/rows.js'
import { sqlite } from './dialect-sql/sqlite.js'
import type { InspectFn, OutboxSql, RowFilter } from './dialect-sql/types.js'
import { updateRow } from './dialect-sql/update.js'

export type {
  IndexInfo,
  InspectFn,
  OutboxRowRead,
  OutboxSql,
  RowChanges,
  RowFilter,
  SeedRow,
  SeedState,
} from './dialect-sql/types.js'
export type { OutboxDialect }

/** Every dialect, in matrix order. */
export const ALL_DIALECTS: readonly OutboxDialect[] = ['postgres', 'mysql', 'sqlite']

const PARTS: Record<OutboxDialect, DialectParts> = { postgres, mysql, sqlite }

/** Validates a dialect name (a typo in a matrix must fail loudly, not run nothing). */
export function assertDialect(value: unknown): OutboxDialect {
  if (typeof value === 'string' && (ALL_DIALECTS as readonly string[]).includes(value))
    return value as OutboxDialect
  throw new Error(
    `[outboxkit] [conformance] unknown dialect ${JSON.stringify(value)}: use one of ${ALL_DIALECTS.join(', ')}`,
  )
}

/**
 * The raw SQL of the suites for `dialect`, run through `inspect` (SQL written for that dialect,
 * with its own placeholders). Table names are the plain unquoted test names.
 */
export function outboxSql(dialect: OutboxDialect, inspect: InspectFn): OutboxSql {
  const d = PARTS[assertDialect(dialect)]
  const q = d.ident
  const rows = async (table: string, filter?: RowFilter) => {
    const w = whereOf(d, filter)
    const got = await inspect(`SELECT ${d.rowColumns} FROM ${q(table)}${w.sql} ORDER BY id`, w.params)
    return got.map(normalizeRow)
  }
  return {
    dialect: d.dialect,
    param: d.param,
    ident: q,
    async count(table, filter) {
      const w = whereOf(d, filter)
      const [r] = await inspect(`SELECT ${d.countExpr} AS n FROM ${q(table)}${w.sql}`, w.params)
      return num(r!.n)
    },
    rows,
    async row(table, id) {
      return (await rows(table, { id }))[0]
    },
    insert: (table, seeds) => insertSeeds(d, inspect, table, seeds),
    update: (table, id, changes) => updateRow(d, inspect, table, id, changes),
    async nowMs() {
      const [r] = await inspect(d.nowMsSql)
      return num(r!.ms)
    },
    indexes: (table) => d.indexes(table, inspect),
    async clear(table) {
      await inspect(`DELETE FROM ${q(table)}`)
    },
    async drop(table) {
      await inspect(`DROP TABLE IF EXISTS ${q(table)}`)
      // MySQL's migrate adds a companion table of ordered keys, `<table>_keys` (64-character names).
      if (d.dialect === 'mysql') await inspect(`DROP TABLE IF EXISTS ${q(`${table.slice(0, 59)}_keys`)}`)
    },
  }
}
