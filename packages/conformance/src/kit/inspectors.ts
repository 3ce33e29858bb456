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
