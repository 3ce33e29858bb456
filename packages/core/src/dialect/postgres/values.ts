/**
 * A JS array as a PostgreSQL array literal: every element quoted and escaped, `null` and
 * `undefined` as an unquoted `NULL`. Core's statements cast array parameters (`$1::uuid[]`,
 * `$6::float8[]`, ...), so the server parses the literal with the column's own type. For drivers
 * that cannot encode arrays themselves in every configuration (postgres.js with
 * `fetch_types: false` sends `a,b`, which the server rejects).
 */
export function postgresArrayLiteral(values: readonly unknown[]): string {
  let out = '{'
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ','
    const v = values[i]
    out +=
      v === null || v === undefined ? 'NULL' : `"${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
  }
  return `${out}}`
}

/** A statement's positional values with every array encoded by {@link postgresArrayLiteral}. */
export function encodeArrayParameters(values: readonly unknown[]): unknown[] {
  return values.map((v) => (Array.isArray(v) ? postgresArrayLiteral(v) : v))
}

/**
 * A string as a PostgreSQL escape-string constant, `E'...'`: backslashes and `'` escaped, so it
 * reads the same whatever `standard_conforming_strings` says. For text only (no NUL: PostgreSQL
 * text cannot hold one, and JSON text never has one raw).
 */
export function postgresTextLiteral(value: string): string {
  return `E'${value.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`
}

/**
 * `text` with each `$n` placeholder replaced by {@link postgresTextLiteral} of `values[n - 1]`, in
 * one pass (a value's own `$` signs are never read as placeholders): the statement to send with
 * the simple query protocol, one message instead of Parse, Bind, Describe, Execute and Sync.
 */
export function inlineTextParameters(text: string, values: readonly string[]): string {
  return text.replace(/\$(\d+)/g, (_, n: string) => postgresTextLiteral(values[Number(n) - 1]!))
}

const SNAKE = /^[a-z0-9_]+$/

function toSnake(name: string): string {
  return name
    .replace(/-/g, '_')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
}

/**
 * Result rows with the column names core's SQL gave them (`dedup_key`, `created_ms`, ...). A
 * driver configured to rename result columns (postgres.js `transform: postgres.camel`, `pascal`,
 * `kebab`) gives `dedupKey`, `DedupKey` or `dedup-key`; the names are put back. Rows already in
 * snake_case are returned as they are, without copying.
 */
export function snakeCaseRows(rows: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  if (rows.every((row) => Object.keys(row).every((k) => SNAKE.test(k))))
    return rows as Record<string, unknown>[]
  return rows.map((row) => {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(row)) out[toSnake(k)] = v
    return out
  })
}
