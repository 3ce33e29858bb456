import type { DialectParts } from './dialect-parts.js'
import type { OutboxRowRead, RowFilter } from './types.js'

/** A number from a driver's value (a bigint from SQLite, a string from some drivers). */
export const num = (v: unknown): number => (typeof v === 'bigint' ? Number(v) : Number(v))

/** A row read by the suites, with the drivers' differences removed. */
export function normalizeRow(r: Record<string, unknown>): OutboxRowRead {
  return {
    id: String(r.id),
    topic: String(r.topic),
    key: r.key == null ? null : String(r.key),
    payload_text: String(r.payload_text),
    headers_text: String(r.headers_text),
    state: String(r.state),
    attempts: num(r.attempts),
    dedup_key: r.dedup_key == null ? null : String(r.dedup_key),
    last_error: r.last_error == null ? null : String(r.last_error),
    available_at_ms: num(r.available_at_ms),
    created_at_ms: num(r.created_at_ms),
    due_in_ms: num(r.due_in_ms),
    delay_ms: num(r.delay_ms),
  }
}

/** The `WHERE` clause (with its leading space, or empty) and parameters of `filter`. */
export function whereOf(d: DialectParts, filter: RowFilter = {}): { sql: string; params: unknown[] } {
  const conds: string[] = []
  const params: unknown[] = []
  for (const col of ['id', 'topic', 'state'] as const) {
    const v = filter[col]
    if (v === undefined) continue
    params.push(v)
    conds.push(`${col} = ${d.param(params.length)}`)
  }
  return { sql: conds.length ? ` WHERE ${conds.join(' AND ')}` : '', params }
}
