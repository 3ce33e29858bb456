import type { DialectParts } from './dialect-parts.js'

/** `now()` in integer epoch ms from SQLite's own clock, as core's SQLite statements compute it. */
const SQLITE_NOW_MS = `CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)`

/** The suites' raw SQL on SQLite. */
export const sqlite: DialectParts = {
  dialect: 'sqlite',
  param: () => '?',
  ident: (name) => `"${name.replace(/"/g, '""')}"`,
  rowColumns: `id, topic, "key", payload AS payload_text, headers AS headers_text, state, attempts, dedup_key,
    last_error, available_at AS available_at_ms, created_at AS created_at_ms,
    available_at - ${SQLITE_NOW_MS} AS due_in_ms, available_at - created_at AS delay_ms`,
  countExpr: 'count(*)',
  nowPlusMs: (p) => `${SQLITE_NOW_MS} + ${p}`,
  jsonParam: (p) => p,
  nowMsSql: `SELECT (julianday('now') - 2440587.5) * 86400000.0 AS ms`,
  async indexes(table, inspect) {
    const rows = await inspect(
      `SELECT il.name AS name, il."unique" AS is_unique, il.partial AS partial, m.sql AS definition,
              (SELECT group_concat(name, ',') FROM (SELECT ii.name FROM pragma_index_info(il.name) ii ORDER BY ii.seqno)) AS cols
       FROM pragma_index_list(?) il LEFT JOIN sqlite_master m ON m.type = 'index' AND m.name = il.name
       ORDER BY il.name`,
      [table],
    )
    return rows.map((r) => ({
      name: String(r.name),
      unique: Number(r.is_unique) === 1,
      columns: String(r.cols ?? '').split(','),
      partial: Number(r.partial) === 1,
      definition: r.definition == null ? null : String(r.definition),
    }))
  },
  availableAtOf: (t, p) => `(SELECT available_at FROM ${t} WHERE id = ${p})`,
}
