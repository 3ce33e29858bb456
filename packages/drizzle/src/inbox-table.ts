import type { Inbox } from '@outboxkit/core'
import { sql } from 'drizzle-orm'
import {
  datetime,
  index as mysqlIndex,
  primaryKey as mysqlPrimaryKey,
  mysqlTable,
  varchar,
} from 'drizzle-orm/mysql-core'
import { index, pgSchema, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core'
import {
  integer,
  index as sqliteIndex,
  primaryKey as sqlitePrimaryKey,
  sqliteTable,
  text as sqliteText,
} from 'drizzle-orm/sqlite-core'

// The inbox table (defineInbox) as Drizzle tables, for drizzle-kit: the columns, primary key and
// (consumer, processed_at) index that migrate(inbox, backend) creates.

const indexName = (name: string) => `${name.slice(0, 63 - 'processed_at_idx'.length - 1)}_processed_at_idx`

/**
 * The inbox table as a Drizzle `pgTable`: `consumer`, `message_id` (the primary key together),
 * `processed_at`, and the `(consumer, processed_at)` index, as `migrate(inbox, backend)` creates
 * them. Export it from your Drizzle schema file; write it only through `processOnce`.
 *
 * @example
 * ```ts
 * export const inboxEntries = inboxTable(inbox)
 * ```
 */
export function inboxTable(inbox: Inbox) {
  const { name, schema } = inbox.table
  const cols = {
    consumer: text('consumer').notNull(),
    messageId: text('message_id').notNull(),
    processedAt: timestamp('processed_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  }
  const extras = (t: { consumer: any; messageId: any; processedAt: any }) => [
    primaryKey({ columns: [t.consumer, t.messageId], name: `${name.slice(0, 58)}_pkey` }),
    index(indexName(name)).on(t.consumer, t.processedAt),
  ]
  return schema ? pgSchema(schema).table(name, cols, extras) : pgTable(name, cols, extras)
}

/** {@link inboxTable} for MySQL/MariaDB (`mysqlTable`; `VARCHAR(255)` ids, `DATETIME(6)` in UTC). */
export function inboxMysqlTable(inbox: Inbox) {
  const { name } = inbox.table
  return mysqlTable(
    name,
    {
      consumer: varchar('consumer', { length: 255 }).notNull(),
      messageId: varchar('message_id', { length: 255 }).notNull(),
      processedAt: datetime('processed_at', { fsp: 6 }).notNull().default(sql`(UTC_TIMESTAMP(6))`),
    },
    (t) => [
      mysqlPrimaryKey({ columns: [t.consumer, t.messageId] }),
      mysqlIndex(indexName(name)).on(t.consumer, t.processedAt),
    ],
  )
}

/** {@link inboxTable} for SQLite (`sqliteTable`; `processed_at` in epoch milliseconds). */
export function inboxSqliteTable(inbox: Inbox) {
  const { name } = inbox.table
  return sqliteTable(
    name,
    {
      consumer: sqliteText('consumer').notNull(),
      messageId: sqliteText('message_id').notNull(),
      processedAt: integer('processed_at').notNull(),
    },
    (t) => [
      sqlitePrimaryKey({ columns: [t.consumer, t.messageId] }),
      sqliteIndex(indexName(name)).on(t.consumer, t.processedAt),
    ],
  )
}
