import { encodeArrayParameters } from '@outboxkit/core/adapter'
import type postgres from 'postgres'

/** Any postgres.js `sql`: the root instance, a `TransactionSql` or a `ReservedSql`. */
export type AnySql = Pick<postgres.Sql<any>, 'unsafe'>

/**
 * Sends one core statement through postgres.js' raw-SQL path on `sql`, with the statement text and
 * positional values as given (arrays encoded as array literals). `prepare: true` lets postgres.js
 * keep a named prepared statement per connection, so after the first use on a connection the
 * statement costs one round trip (`sql.unsafe` alone would parse and describe it every time: two).
 * A user's `prepare: false` (PgBouncer in transaction mode) still wins.
 */
export function runStatement(
  sql: AnySql,
  text: string,
  values: readonly unknown[],
): postgres.PendingQuery<Record<string, unknown>[]> {
  return sql.unsafe<Record<string, unknown>[]>(text, encodeArrayParameters(values) as never[], {
    prepare: true,
  })
}
