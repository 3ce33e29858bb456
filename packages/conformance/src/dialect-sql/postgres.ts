import type { DialectParts } from './dialect-parts.js'

/** The suites' raw SQL on PostgreSQL. */
export const postgres: DialectParts = {
  dialect: 'postgres',
  param: (n) => `$${n}`,
  ident: (name) => `"${name.replace(/"/g, '""')}"`,
  rowColumns: `id::text AS id, topic, key, payload::text AS payload_text, headers::text AS headers_text, state,
    attempts, dedup_key, last_error,
    floor(extract(epoch FROM available_at) * 1000)::float8 AS available_at_ms,
    floor(extract(epoch FROM created_at) * 1000)::float8 AS created_at_ms,
    (extract(epoch FROM available_at - now()) * 1000)::float8 AS due_in_ms,
    (extract(epoch FROM available_at - created_at) * 1000)::float8 AS delay_ms`,
  countExpr: 'count(*)::int',
  nowPlusMs: (p) => `now() + ${p}::float8 * interval '1 millisecond'`,
  jsonParam: (p) => `${p}::jsonb`,
  nowMsSql: `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms`,
  async indexes(table, inspect) {
    const rows = await inspect(
      `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = $1 ORDER BY indexname`,
      [table],
    )
    return rows.map((r) => {
      const def = String(r.indexdef)
      return {
        name: String(r.indexname),
        unique: /^CREATE UNIQUE INDEX/.test(def),
        columns: (/\(([^)]*)\)/.exec(def)?.[1] ?? '').split(',').map((c) => c.trim()),
        partial: / WHERE /.test(def),
        definition: def,
      }
    })
  },
  availableAtOf: (t, p) => `(SELECT available_at FROM ${t} WHERE id = ${p})`,
}
