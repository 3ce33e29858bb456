import type { OutboxDialect } from '@outboxkit/core'
import { OutboxError } from '@outboxkit/core'
import { MssqlAdapter, MysqlAdapter, PostgresAdapter, SqliteAdapter, sql } from 'kysely'

export type { OutboxDialect }

/** The slice of a Kysely instance read to choose the dialect (every `Kysely` has it). */
interface ExecutorProvider {
  getExecutor(): { readonly adapter: object }
  withoutPlugins(): unknown
}

const known = new WeakMap<object, OutboxDialect>()

/**
 * The dialect of Kysely's own adapter classes, or of a subclass of one (a dialect built on
 * Kysely's `PostgresAdapter`, such as a PGlite or Neon dialect, is PostgreSQL).
 */
function byAdapterClass(adapter: object): OutboxDialect | 'mssql' | undefined {
  if (adapter instanceof PostgresAdapter) return 'postgres'
  if (adapter instanceof MysqlAdapter) return 'mysql'
  if (adapter instanceof SqliteAdapter) return 'sqlite'
  if (adapter instanceof MssqlAdapter) return 'mssql'
  return undefined
}

/**
 * For an adapter that is none of Kysely's classes (a dialect that wraps another adapter, or a
 * second copy of kysely in node_modules): the SQL the handle's own query compiler writes for an
 * identifier and a parameter. `"p"$1` is PostgreSQL, `` `p`? `` MySQL, `"p"?` SQLite. Compiling
 * sends nothing.
 */
function byCompiledSql(handle: ExecutorProvider): OutboxDialect | undefined {
  let text: string
  try {
    // Without plugins, so that no plugin can rewrite the probe.
    text = sql`${sql.id('p')}${0}`.compile(handle.withoutPlugins() as never).sql
  } catch {
    return undefined
  }
  if (text === '"p"$1') return 'postgres'
  if (text === '`p`?') return 'mysql'
  if (text === '"p"?') return 'sqlite'
  return undefined
}

/**
 * The dialect of a Kysely transaction, from its executor's adapter (`PostgresAdapter`,
 * `MysqlAdapter`, `SqliteAdapter` or a subclass), else from the SQL its query compiler writes.
 * Reads nothing from the database; the answer is cached per adapter.
 *
 * @param handle - a Kysely `Transaction` (already checked to be one)
 * @throws OutboxError `INVALID_CONFIG` for MS SQL Server and for a dialect that writes none of
 * the three SQL flavours.
 */
export function kyselyDialect(handle: ExecutorProvider): OutboxDialect {
  const adapter = handle.getExecutor().adapter
  const cached = known.get(adapter)
  if (cached) return cached
  const byClass = byAdapterClass(adapter)
  const dialect = byClass === 'mssql' ? undefined : (byClass ?? byCompiledSql(handle))
  if (!dialect) {
    const name = byClass === 'mssql' ? 'MssqlAdapter' : (adapter.constructor?.name ?? 'an unknown adapter')
    throw new OutboxError(
      'INVALID_CONFIG',
      `publish supports Kysely's PostgreSQL, MySQL and SQLite dialects, got a transaction whose dialect adapter is ${name}. Use PostgresDialect, MysqlDialect or SqliteDialect (or a dialect built on their adapters). Nothing was written.`,
      { source: 'kysely' },
    )
  }
  known.set(adapter, dialect)
  return dialect
}
