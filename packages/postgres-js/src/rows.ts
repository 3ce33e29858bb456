const SNAKE = /^[a-z0-9_]+$/

function toSnake(name: string): string {
  return name
    .replace(/-/g, '_')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
}

/**
 * Result rows with the column names core's SQL gave them (`dedup_key`, `created_ms`, ...).
 *
 * A postgres.js instance made with `transform: postgres.camel` (or `pascal`, `kebab`) renames
 * result columns (`dedupKey`, `DedupKey`, `dedup-key`); core reads the snake_case names, so they
 * are put back. Rows already in snake_case (no transform) are returned as they are.
 */
export function snakeCaseRows(rows: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  const first = rows[0]
  if (first === undefined || Object.keys(first).every((k) => SNAKE.test(k))) {
    return rows as Record<string, unknown>[]
  }
  return rows.map((row) => {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(row)) out[toSnake(k)] = v
    return out
  })
}
