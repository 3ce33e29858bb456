import type { DialectParts } from './dialect-parts.js'
import type { IndexInfo } from './types.js'

/** Microseconds from the epoch to a MySQL DATETIME(6) holding UTC. */
const mysqlEpochUs = (col: string) => `TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${col})`

/** The suites' raw SQL on MySQL. */
export const mysql: DialectParts = {
  dialect: 'mysql',
  param: () => '?',
  ident: (name) => `\`${name.replace(/`/g, '``')}\``,
  rowColumns: `id, topic, \`key\`, CAST(payload AS CHAR) AS payload_text, CAST(headers AS CHAR) AS headers_text,
    state, attempts, dedup_key, last_error,
    ${mysqlEpochUs('available_at')} DIV 1000 AS available_at_ms,
    ${mysqlEpochUs('created_at')} DIV 1000 AS created_at_ms,
    TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), available_at) / 1000 AS due_in_ms,
    TIMESTAMPDIFF(MICROSECOND, created_at, available_at) / 1000 AS delay_ms`,
  countExpr: 'count(*)',
  nowPlusMs: (p) => `UTC_TIMESTAMP(6) + INTERVAL ${p} MICROSECOND`,
  jsonParam: (p) => p,
  nowMsSql: `SELECT ${mysqlEpochUs('UTC_TIMESTAMP(6)')} / 1000 AS ms`,
  async indexes(table, inspect) {
    const rows = await inspect(
      `SELECT s.index_name AS name, s.non_unique AS non_unique, s.column_name AS col,
              c.generation_expression AS expr
       FROM information_schema.statistics s
       LEFT JOIN information_schema.columns c
         ON c.table_schema = s.table_schema AND c.table_name = s.table_name AND c.column_name = s.column_name
       WHERE s.table_schema = DATABASE() AND s.table_name = ?
       ORDER BY s.index_name, s.seq_in_index`,
      [table],
    )
    const byName = new Map<string, IndexInfo>()
    for (const r of rows) {
      const name = String(r.name)
      let index = byName.get(name)
      if (!index) {
        index = { name, unique: Number(r.non_unique) === 0, columns: [], partial: null, definition: null }
        index.generated = []
        byName.set(name, index)
      }
      index.columns.push(String(r.col))
      index.generated!.push(r.expr == null || r.expr === '' ? null : String(r.expr))
    }
    return [...byName.values()]
  },
  // MySQL refuses a subquery on the table being updated unless it is materialised first.
  availableAtOf: (t, p) => `(SELECT a FROM (SELECT available_at AS a FROM ${t} WHERE id = ${p}) AS src)`,
}
