import type { TableRef } from '@outboxkit/core'
import { outboxIndexNames } from '@outboxkit/core/adapter'
import { sql } from 'drizzle-orm'
import {
  type AnyPgColumn,
  bigint,
  check,
  index,
  integer,
  jsonb,
  pgSchema,
  pgSequence,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core'
import { type OutboxTableSource, tableRef } from './table-ref.js'

/** The `state` values of an outbox row. */
export const OUTBOX_STATES = ['pending', 'processing', 'delivered', 'dead'] as const

/**
 * The name PostgreSQL gives the unnamed `CHECK` of `migrate`'s DDL (its makeObjectName rule: clip
 * the longer of table and column until `<table>_<column>_<label>` fits in 63 bytes).
 */
function derivedName(table: string, column: string, label: string): string {
  const avail = 63 - (label.length + 1) - 1 // the two underscores
  let a = table.length
  let b = column.length
  while (a + b > avail) {
    if (a > b) a--
    else b--
  }
  return `${table.slice(0, a)}_${column.slice(0, b)}_${label}`
}

function columns() {
  return {
    id: uuid('id').primaryKey(),
    topic: text('topic').notNull(),
    key: text('key'),
    payload: jsonb('payload').$type<unknown>().notNull(),
    headers: jsonb('headers').$type<Record<string, string>>().notNull().default(sql`'{}'::jsonb`),
    state: text('state', { enum: OUTBOX_STATES }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    availableAt: timestamp('available_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    dedupKey: text('dedup_key'),
    lastError: text('last_error'),
    /** Position in its key's order, for messages of ordered topics (`null` otherwise). */
    seq: bigint('seq', { mode: 'number' }),
  }
}

/** The `state` check and the four partial indexes, named as `migrate` names them. */
function extras(table: TableRef) {
  const { due, dedupKey, keySeq, dead } = outboxIndexNames(table)
  return (t: {
    id: AnyPgColumn
    topic: AnyPgColumn
    key: AnyPgColumn
    seq: AnyPgColumn
    availableAt: AnyPgColumn
    dedupKey: AnyPgColumn
  }) => [
    check(
      derivedName(table.name, 'state', 'check'),
      sql`state IN ('pending', 'processing', 'delivered', 'dead')`,
    ),
    index(due).on(t.availableAt, t.id).where(sql`state IN ('pending', 'processing')`),
    uniqueIndex(dedupKey).on(t.dedupKey).where(sql`dedup_key IS NOT NULL`),
    index(keySeq).on(t.key, t.seq).where(sql`seq IS NOT NULL AND state <> 'delivered'`),
    index(dead).on(t.availableAt, t.topic).where(sql`state = 'dead'`),
  ]
}

function build(table: TableRef) {
  return pgTable(table.name, columns(), extras(table))
}

/** The Drizzle table {@link outboxTable} returns: the outbox's columns, check and indexes. */
export type OutboxTable = ReturnType<typeof build>

/**
 * The outbox table as a Drizzle `pgTable`, for drizzle-kit: the same columns, types, defaults,
 * `state` check and the four partial indexes that `migrate` creates, so `drizzle-kit generate`
 * writes the outbox into your migrations (and `drizzle-kit push` sees no difference from a table
 * `migrate` created). Export it from your Drizzle schema file.
 *
 * @param table - the outbox table as in `defineOutbox({ table })`: `'outbox'` (default) or
 *   `'schema.table'`, or the outbox itself. With a schema, also export `pgSchema('schema')` from
 *   your schema file so drizzle-kit creates it.
 * @example
 * ```ts
 * // db/schema.ts
 * import { outboxTable } from '@outboxkit/drizzle'
 * export const outbox = outboxTable()            // table "outbox"
 * // or: export const outbox = outboxTable(myOutbox), with myOutbox = defineOutbox({ table: 'app.outbox' })
 * ```
 * @throws OutboxError `INVALID_CONFIG` for a name `defineOutbox` would refuse.
 */
export function outboxTable(table: OutboxTableSource = 'outbox'): OutboxTable {
  const ref = tableRef(table)
  if (ref.schema === null) return build(ref)
  // The same table in a PostgreSQL schema; typed like the unqualified one (only `schema` differs).
  return pgSchema(ref.schema).table(ref.name, columns(), extras(ref)) as unknown as OutboxTable
}

/**
 * The sequence that numbers messages of ordered topics (`defineOutbox({ orderedTopics })`), as
 * `migrate` creates it, for `drizzle-kit generate`: export it from your Drizzle schema file next
 * to {@link outboxTable} when your migrations come from drizzle-kit rather than `migrate`, since
 * a publish to an ordered topic needs it. Not for `drizzle-kit push`: the sequence is owned by the
 * `seq` column, which push takes as that column's own sequence, so push needs no export.
 *
 * @param table - as for {@link outboxTable}
 * @example
 * ```ts
 * export const outbox = outboxTable(myOutbox)
 * export const outboxSeq = outboxSequence(myOutbox)
 * ```
 */
export function outboxSequence(table: OutboxTableSource = 'outbox') {
  const ref = tableRef(table, 'outboxSequence')
  const { sequence } = outboxIndexNames(ref)
  return ref.schema === null ? pgSequence(sequence) : pgSchema(ref.schema).sequence(sequence)
}
