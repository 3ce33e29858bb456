import { OutboxError, type TableRef } from '@outboxkit/core'
import { outboxIndexNames, SQLITE_NOW_MS } from '@outboxkit/core/adapter'
import { sql } from 'drizzle-orm'
import {
  type AnySQLiteColumn,
  check,
  index,
  integer,
  sqliteTable,
  text,
  uniqueIndex,
} from 'drizzle-orm/sqlite-core'
import { OUTBOX_STATES } from './outbox-table.js'
import { type OutboxTableSource, tableRef } from './table-ref.js'

/** SQLite's clock in epoch ms, the default of `available_at` and `created_at` (as `migrate` writes it). */
const now = sql.raw(`(${SQLITE_NOW_MS})`)

function columns() {
  return {
    id: text('id').primaryKey(),
    topic: text('topic').notNull(),
    key: text('key'),
    payload: text('payload', { mode: 'json' }).$type<unknown>().notNull(),
    headers: text('headers', { mode: 'json' }).$type<Record<string, string>>().notNull().default(sql`'{}'`),
    state: text('state', { enum: OUTBOX_STATES }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    /** INTEGER epoch milliseconds in the database, a `Date` in Drizzle. */
    availableAt: integer('available_at', { mode: 'timestamp_ms' }).notNull().default(now),
    createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull().default(now),
    dedupKey: text('dedup_key'),
    lastError: text('last_error'),
    /** Position in its key's order, for messages of ordered topics (`null` otherwise). */
    seq: integer('seq'),
  }
}

/** The `state` check and the four partial indexes, named as `migrate` names them. */
function extras(table: TableRef) {
  const { due, dedupKey, keySeq, dead } = outboxIndexNames(table)
  return (t: {
    id: AnySQLiteColumn
    topic: AnySQLiteColumn
    key: AnySQLiteColumn
    seq: AnySQLiteColumn
    availableAt: AnySQLiteColumn
    dedupKey: AnySQLiteColumn
  }) => [
    check(`${table.name}_state_check`, sql`state IN ('pending', 'processing', 'delivered', 'dead')`),
    index(due).on(t.availableAt, t.id).where(sql`state IN ('pending', 'processing')`),
    uniqueIndex(dedupKey).on(t.dedupKey).where(sql`dedup_key IS NOT NULL`),
    index(keySeq).on(t.key, t.seq).where(sql`seq IS NOT NULL AND state <> 'delivered'`),
    index(dead).on(t.availableAt, t.topic).where(sql`state = 'dead'`),
  ]
}

function build(table: TableRef) {
  return sqliteTable(table.name, columns(), extras(table))
}

/** The Drizzle table {@link outboxSqliteTable} returns: the outbox's columns, check and indexes on SQLite. */
export type OutboxSqliteTable = ReturnType<typeof build>

/**
 * The outbox table as a Drizzle `sqliteTable`, for drizzle-kit (`dialect: 'sqlite'`): the same
 * columns, types, defaults, `state` check and the four partial indexes (with the same names) that
 * `migrate` creates on SQLite, so `drizzle-kit generate` writes the outbox into your migrations.
 * Export it from your Drizzle schema file. `availableAt` and `createdAt` are INTEGER epoch
 * milliseconds in the database and `Date`s in Drizzle; `payload` and `headers` are JSON text,
 * parsed by Drizzle.
 *
 * @param table - the outbox table as in `defineOutbox({ table })`: `'outbox'` (default), or the
 *   outbox itself. Drizzle's SQLite tables have no schema, so a `'schema.table'` name (a table of
 *   an attached database) is refused.
 * @example
 * ```ts
 * // db/schema.ts
 * import { outboxSqliteTable } from '@outboxkit/drizzle'
 * export const outbox = outboxSqliteTable() // table "outbox"
 * ```
 * @throws OutboxError `INVALID_CONFIG` for a name `defineOutbox` would refuse, or a schema-qualified one.
 */
export function outboxSqliteTable(table: OutboxTableSource = 'outbox'): OutboxSqliteTable {
  const ref = tableRef(table, 'outboxSqliteTable')
  if (ref.schema !== null) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `outboxSqliteTable cannot formatValue ${ref.display}: Drizzle's SQLite tables have no schema (an attached database). Use an unqualified table name, or create the table with migrate(outbox, backend).`,
      { source: 'drizzle' },
    )
  }
  return build(ref)
}
