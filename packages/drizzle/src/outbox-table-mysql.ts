import type { OutboxState, TableRef } from '@outboxkit/core'
import { mysqlOutboxNames } from '@outboxkit/core/adapter'
import { sql } from 'drizzle-orm'
import {
  type AnyMySqlColumn,
  bigint,
  binary,
  check,
  customType,
  datetime,
  index,
  int,
  mysqlSchema,
  mysqlTable,
  primaryKey,
  uniqueIndex,
} from 'drizzle-orm/mysql-core'
import { type OutboxTableSource, tableRef } from './table-ref.js'

/**
 * A text column with the character set and collation `migrate` gives it: `migrate` creates the
 * table with `DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin` (exact, case-sensitive comparison of
 * topics and keys), which a Drizzle table cannot say, so each column says it.
 */
function textColumn<T extends string = string>(sqlType: string, charset: 'utf8mb4' | 'ascii' = 'utf8mb4') {
  return customType<{ data: T; driverData: string }>({
    dataType: () => `${sqlType} CHARACTER SET ${charset} COLLATE ${charset}_bin`,
  })
}

/**
 * A JSON column. MariaDB stores JSON as LONGTEXT and mysql2 returns it as text there (MySQL
 * returns it parsed): either way Drizzle gives the parsed value.
 */
function jsonColumn<T>() {
  return customType<{ data: T; driverData: string }>({
    dataType: () => 'json',
    toDriver: (value) => JSON.stringify(value),
    fromDriver: (value) => (typeof value === 'string' ? JSON.parse(value) : value) as T,
  })
}

/** The server's clock in UTC, the default of `available_at` and `created_at` (as `migrate` writes it). */
const NOW = sql`(UTC_TIMESTAMP(6))`

function columns() {
  return {
    id: textColumn('char(36)', 'ascii')('id').notNull(),
    topic: textColumn('varchar(255)')('topic').notNull(),
    key: textColumn('varchar(1024)')('key'),
    payload: jsonColumn<unknown>()('payload').notNull(),
    headers: jsonColumn<Record<string, string>>()('headers').notNull().default(sql`('{}')`),
    state: textColumn<OutboxState>('varchar(10)', 'ascii')('state').notNull().default('pending'),
    attempts: int('attempts').notNull().default(0),
    /** DATETIME(6) in UTC (the server's clock), a `Date` in Drizzle. */
    availableAt: datetime('available_at', { mode: 'date', fsp: 6 }).notNull().default(NOW),
    createdAt: datetime('created_at', { mode: 'date', fsp: 6 }).notNull().default(NOW),
    dedupKey: textColumn('varchar(1024)')('dedup_key'),
    lastError: textColumn('mediumtext')('last_error'),
    /** Position in its key's order, for messages of ordered topics (`null` otherwise). */
    seq: bigint('seq', { mode: 'number' }),
    /** Generated: `available_at` while the row is pending or processing, else NULL (the claim's index). */
    dueAt: datetime('due_at', { mode: 'date', fsp: 6 }).generatedAlwaysAs(
      sql`(case when state in ('pending','processing') then available_at end)`,
      { mode: 'stored' },
    ),
    /** Generated: SHA-256 of `dedup_key` (its unique index). */
    dedupHash: binary('dedup_hash', { length: 32 }).generatedAlwaysAs(sql`(unhex(sha2(dedup_key,256)))`, {
      mode: 'stored',
    }),
    /** Generated: SHA-256 of `key` for messages of ordered topics. */
    keyHash: binary('key_hash', { length: 32 }).generatedAlwaysAs(
      sql`(case when seq is not null then unhex(sha2(\`key\`,256)) end)`,
      { mode: 'stored' },
    ),
  }
}

/**
 * The name drizzle-kit gives the primary key: MySQL ignores it (a primary key is always named
 * `PRIMARY`) but refuses one over 64 characters, which drizzle-kit's `<table>_<column>` can be.
 */
function pkName(table: string): string {
  return `${table.slice(0, 64 - 3)}_pk`
}

/** The primary key, the `state` check and the three indexes, named as `migrate` names them. */
function extras(table: TableRef) {
  const names = mysqlOutboxNames(table)
  return (t: {
    id: AnyMySqlColumn
    dueAt: AnyMySqlColumn
    dedupHash: AnyMySqlColumn
    keyHash: AnyMySqlColumn
    seq: AnyMySqlColumn
  }) => [
    primaryKey({ name: pkName(table.name), columns: [t.id] }),
    index(names.due).on(t.dueAt, t.id),
    uniqueIndex(names.dedupKey).on(t.dedupHash),
    index(names.keySeq).on(t.keyHash, t.seq),
    check(names.stateCheck, sql`state IN ('pending', 'processing', 'delivered', 'dead')`),
  ]
}

function build(table: TableRef) {
  return mysqlTable(table.name, columns(), extras(table))
}

/** The Drizzle table {@link outboxMysqlTable} returns: the outbox's columns, check and indexes on MySQL. */
export type OutboxMysqlTable = ReturnType<typeof build>

/**
 * The outbox table as a Drizzle `mysqlTable`, for drizzle-kit (`dialect: 'mysql'`, MySQL 8+ and
 * MariaDB 10.6+): the same columns (with their character sets and collations), defaults,
 * generated columns, `state` check and indexes (with the same names) that `migrate` creates, so
 * `drizzle-kit generate` writes the outbox into your migrations. Export it from your Drizzle
 * schema file. `availableAt` and `createdAt` are DATETIME(6) in UTC, `Date`s in Drizzle; the
 * generated columns (`dueAt`, `dedupHash`, `keyHash`) serve the relay's indexes.
 *
 * @param table - the outbox table as in `defineOutbox({ table })`: `'outbox'` (default) or
 *   `'database.table'`, or the outbox itself.
 * @example
 * ```ts
 * // db/schema.ts
 * import { outboxMysqlTable } from '@outboxkit/drizzle'
 * export const outbox = outboxMysqlTable() // table `outbox`
 * ```
 * @throws OutboxError `INVALID_CONFIG` for a name `defineOutbox` would refuse.
 */
export function outboxMysqlTable(table: OutboxTableSource = 'outbox'): OutboxMysqlTable {
  const ref = tableRef(table, 'outboxMysqlTable')
  if (ref.schema === null) return build(ref)
  // The same table in another database; typed like the unqualified one (only `schema` differs).
  return mysqlSchema(ref.schema).table(ref.name, columns(), extras(ref)) as unknown as OutboxMysqlTable
}

function keysColumns() {
  return {
    keyHash: binary('key_hash', { length: 32 }).notNull(),
    key: textColumn('varchar(1024)')('key').notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
  }
}

/**
 * The companion table of ordered keys (one row per key with its last `seq`) that `migrate`
 * creates on MySQL for an outbox with `orderedTopics` (docs/ordering.md), for drizzle-kit: export
 * it next to {@link outboxMysqlTable} when your migrations come from drizzle-kit and the outbox has
 * ordered topics, since a publish to an ordered topic needs it.
 *
 * @param table - as for {@link outboxMysqlTable}: the outbox's table, not the keys table's name
 * @example
 * ```ts
 * export const outbox = outboxMysqlTable(myOutbox)
 * export const outboxKeys = outboxMysqlKeysTable(myOutbox)
 * ```
 */
export function outboxMysqlKeysTable(table: OutboxTableSource = 'outbox') {
  const ref = tableRef(table, 'outboxMysqlKeysTable')
  const { keysTable } = mysqlOutboxNames(ref)
  const extra = (t: { keyHash: AnyMySqlColumn }) => [
    primaryKey({ name: pkName(keysTable), columns: [t.keyHash] }),
  ]
  return ref.schema === null
    ? mysqlTable(keysTable, keysColumns(), extra)
    : mysqlSchema(ref.schema).table(keysTable, keysColumns(), extra)
}
