import type { Inspector } from '../database.js'

/** A database that answers raw SQL with `{ rows }`, as PGlite does. */
export interface RowsQueryable {
  query<T>(text: string, params?: unknown[]): Promise<{ rows: T[] }>
}

/**
 * An {@link Inspector} on `db` itself (PGlite: the same instance, outside any transaction of the
 * test). Closing it leaves `db` open: the test closes what it opened.
 */
export function rowsInspector(db: RowsQueryable): Inspector {
  return {
    async query<T>(text: string, params?: unknown[]) {
      return (await db.query<T>(text, params)).rows
    },
    async close() {},
  }
}

/**
 * The `inspect` and `teardown` of a suite's context (publish or backend conformance) on
 * `inspector`: raw SQL through it, and closing it (then `close`, for what else the file opened).
 */
export function inspectedBy(
  inspector: Inspector,
  close?: () => unknown,
): {
  inspect(text: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  teardown(): Promise<void>
} {
  return {
    inspect: (text, params) => inspector.query(text, params),
    async teardown() {
      await inspector.close()
      await close?.()
    },
  }
}
