/**
 * Encodes one JS array as a PostgreSQL array literal: every element quoted and escaped, `null`
 * as an unquoted `NULL`. The statement casts the parameter (`$1::uuid[]`, `$6::float8[]`...), so
 * the server parses the literal with the column's own type.
 *
 * postgres.js would encode the array itself, but only with the array serializers it fetches when
 * a connection opens: with `fetch_types: false` it sends `a,b` and the server rejects it as a
 * malformed array literal. Encoding here works the same under every option.
 */
export function arrayLiteral(values: readonly unknown[]): string {
  let out = '{'
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ','
    const v = values[i]
    if (v === null || v === undefined) {
      out += 'NULL'
      continue
    }
    out += `"${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
  }
  return `${out}}`
}

/**
 * The positional values of a core statement as postgres.js parameters: arrays become array
 * literals (see {@link arrayLiteral}); strings, numbers, booleans and `null` pass through, so a
 * JSON text bound to `$n::text::jsonb` reaches PostgreSQL as text and is parsed once.
 */
export function encodeParameters(values: readonly unknown[]): unknown[] {
  return values.map((v) => (Array.isArray(v) ? arrayLiteral(v) : v))
}
