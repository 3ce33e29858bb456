import type { Outbox, TableRef } from '../../outbox/define-outbox.js'
import { sqliteAdminStatements } from './statements/admin.js'
import { sqliteClaimStatements } from './statements/claim.js'
import { sqliteDdlStatements } from './statements/ddl.js'
import { sqlitePublishStatements } from './statements/publish.js'
import { sqliteSettleStatements } from './statements/settle.js'
import { type SqliteSql, sqliteTable } from './statements/table.js'

// Every SQL statement of SQLite is written in ./statements/, one file per concept (ddl, publish,
// claim, settle, admin); this file is their one entry point, cached per table.

export { bindSqlite, SQLITE_NOW_MS, type SqliteSql } from './statements/table.js'

/**
 * Every SQL statement outboxkit runs on SQLite for one table. Lists (topics, ids, settlements)
 * are passed as one JSON text argument and read with `json_each`, so the statement text never
 * depends on the number of items. Timestamps are INTEGER epoch milliseconds from SQLite's clock
 * ({@link SQLITE_NOW_MS}).
 */
export interface SqliteStatements {
  /** Idempotent DDL (multi-statement), for users' migration tools. */
  readonly ddl: string
  /** The script `migrate` runs (inside `BEGIN IMMEDIATE`, so concurrent runs take turns). */
  readonly migrate: string
  /**
   * Publish one message of an unordered topic: id, topic, key, payload (JSON text), headers (JSON
   * text), delay_ms (integer), dedup_key. Rows: (id) when inserted; none on a dedup conflict.
   */
  readonly publishOne: SqliteSql
  /** `publishOne` for a message of an ordered topic: numbers it after the last `seq` of its key. */
  readonly publishOneOrdered: SqliteSql
  /**
   * Publish any number of messages: `messages`, a JSON array of
   * `[id, topic, key, payload, headers, delay_ms, dedup_key, rank]` where `rank` is null for
   * unordered topics and, for ordered ones, the 1-based position of the message among the
   * statement's messages of its key. Rows: (id) of each inserted message.
   */
  readonly publishMany: SqliteSql
  /** `dedup_keys` (JSON array). Rows: (id, dedup_key) of the rows holding them. */
  readonly dedupLookup: SqliteSql
  /**
   * `topics` (JSON array), `limit`, `lease_ms`, `max_attempts`. Counts the attempt and writes the
   * lease, or dead-letters rows that used `max_attempts`. Rows: (id, topic, key, payload,
   * headers, attempts, state, created_ms, last_error).
   */
  readonly claim: SqliteSql
  /** `claim` that takes only the head of each key among ordered rows; also `continue_topics` (JSON array). Rows also have `ordered`. */
  readonly claimOrdered: SqliteSql
  /**
   * Deletes delivered rows: `settlements`, a JSON array of `[id, attempts, outcome, delay_ms,
   * error]`; only `'delivered'` entries whose row still has that attempts value and is
   * `'processing'` are deleted. Rows: (id).
   */
  readonly settleDelete: SqliteSql
  /**
   * Writes the other outcomes (and, with `keep_delivered`, delivered ones as `'delivered'`),
   * fenced the same way: `settlements`, `keep_delivered`. Rows: (id).
   */
  readonly settleUpdate: SqliteSql
  /** `rows` (JSON array of `[id, attempts]`), `lease_ms`. Rows: (id) extended. */
  readonly extendLease: SqliteSql
  /** `states` (JSON array), `older_than_ms`. */
  readonly purge: SqliteSql
  /** `ids` and `topics` (JSON arrays or null). */
  readonly redrive: SqliteSql
  /** `states` (JSON array). Rows: (topic, state, n, oldest_age_ms, oldest_due_lag_ms). */
  readonly stats: SqliteSql
  /** `topics` (JSON array or null), `search` (or null), `limit`, and the cursor `after_ms`, `after_id` (null for the first page). */
  readonly listDead: SqliteSql
  /** `topics` (JSON array or null), `search` (or null), `cap`. Rows: (n), at most `cap`. */
  readonly countDead: SqliteSql
  /** `ids` and `topics` (JSON arrays or null). */
  readonly discard: SqliteSql
  /** `continue_topics` (JSON array), `topics` (JSON array or null), `after_key`, `limit`, `include_retrying`. */
  readonly blockedKeys: SqliteSql
}

const cache = new Map<string, SqliteStatements>()

/**
 * Builds (and caches) the SQLite statements for a table. A `schema.table` name means the table
 * `table` of the attached database `schema` (`main`, `temp`, or a name given to `ATTACH`).
 */
export function sqliteStatements(table: TableRef): SqliteStatements {
  const cacheKey = `${table.schema ?? ''}.${table.name}`
  const hit = cache.get(cacheKey)
  if (hit) return hit
  const names = sqliteTable(table)
  const statements: SqliteStatements = {
    ...sqliteDdlStatements(names),
    ...sqlitePublishStatements(names),
    ...sqliteClaimStatements(names),
    ...sqliteSettleStatements(names),
    ...sqliteAdminStatements(names),
  }
  cache.set(cacheKey, statements)
  return statements
}

/**
 * The DDL that creates an outbox table and its indexes on SQLite, for your own migration tool.
 * Idempotent. Same column names as on PostgreSQL; `payload` and `headers` are JSON text,
 * `available_at` and `created_at` INTEGER epoch milliseconds.
 */
export function sqliteOutboxDdl(outbox: Pick<Outbox, 'table'>): string {
  return `${sqliteStatements(outbox.table).ddl};\n`
}
