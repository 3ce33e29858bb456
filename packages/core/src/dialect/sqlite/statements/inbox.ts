import type { TableRef } from '../../../outbox/define-outbox.js'
import { inboxIndexName, qualifiedTable, quoteIdent } from '../../sql-identifiers.js'
import { SQLITE_NOW_MS } from './table.js'

// The inbox statements of SQLite: its table, processOnce's one INSERT, purge and stats.

/** Every SQL statement of an inbox table on SQLite, with positional `?` placeholders. */
export interface SqliteInboxStatements {
  /** Idempotent DDL (multi-statement), for users' migration tools. `processed_at`: epoch ms. */
  readonly ddl: string
  /**
   * processOnce: `consumer, message id`. `ON CONFLICT DO NOTHING RETURNING`: one row when it
   * wrote the row, none when the key exists. SQLite has one writer: a second connection cannot
   * write while a transaction holds the write lock, so it never sees an uncommitted row; it waits
   * (busy timeout) or fails with `SQLITE_BUSY`, and, once the first ended, finds the row or not.
   */
  readonly claim: string
  /** Deletes at most `?` (3rd) rows of consumer `?` processed more than `?` ms ago. */
  readonly purgeBatch: string
  /** `consumer`. Rows: (n, oldest_age_ms). */
  readonly stats: string
}

const cache = new Map<string, SqliteInboxStatements>()

/**
 * Builds (and caches) the SQLite statements of an inbox table (`schema.table`: the table of the
 * attached database `schema`).
 */
export function sqliteInboxStatements(table: TableRef): SqliteInboxStatements {
  const key = `${table.schema ?? ''}.${table.name}`
  const hit = cache.get(key)
  if (hit) return hit
  const t = qualifiedTable(table)
  const index = table.schema
    ? `${quoteIdent(table.schema)}.${quoteIdent(inboxIndexName(table))}`
    : quoteIdent(inboxIndexName(table))
  const statements: SqliteInboxStatements = {
    ddl: [
      `CREATE TABLE IF NOT EXISTS ${t} (
  consumer TEXT NOT NULL,
  message_id TEXT NOT NULL,
  processed_at INTEGER NOT NULL DEFAULT (${SQLITE_NOW_MS}),
  PRIMARY KEY (consumer, message_id)
)`,
      `CREATE INDEX IF NOT EXISTS ${index} ON ${quoteIdent(table.name)} (consumer, processed_at)`,
    ].join(';\n'),
    claim: `INSERT INTO ${t} (consumer, message_id, processed_at) VALUES (?, ?, ${SQLITE_NOW_MS})
ON CONFLICT (consumer, message_id) DO NOTHING RETURNING 1 AS inserted`,
    purgeBatch: `DELETE FROM ${t} WHERE rowid IN (
  SELECT rowid FROM ${t} WHERE consumer = ? AND processed_at < ${SQLITE_NOW_MS} - ? LIMIT ?
)`,
    stats: `SELECT count(*) AS n, ${SQLITE_NOW_MS} - min(processed_at) AS oldest_age_ms FROM ${t} WHERE consumer = ?`,
  }
  cache.set(key, statements)
  return statements
}
