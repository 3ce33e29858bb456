import type { TableRef } from '../../../outbox/define-outbox.js'
import { inboxIndexName } from '../../sql-identifiers.js'
import { mysqlQualifiedTable, NOW, quoteMysqlIdent } from './table.js'

// The inbox statements of MySQL and MariaDB: its table, processOnce's one INSERT, purge, stats.

/** Every SQL statement of an inbox table on MySQL 8+ and MariaDB 10.6+, with `?` placeholders. */
export interface MysqlInboxStatements {
  /** Idempotent DDL (one `CREATE TABLE IF NOT EXISTS`, its index inside), for users' migration tools. */
  readonly ddl: string
  /**
   * processOnce: `consumer, message id`. `INSERT IGNORE`: one affected row when it wrote the row,
   * none when the key exists. InnoDB makes it wait on a key inserted by a transaction still open
   * (a shared lock on the duplicate record), then ignores it once that one committed, or writes
   * it once that one rolled back. With `guard` (see `MARIADB_TRANSACTION_GUARD`) it writes only
   * while the guard holds. The ids were checked first (at most 255 characters): `IGNORE` would
   * otherwise turn a too-long value into a warning.
   */
  claim(guard?: string): string
  /** Deletes at most the last `?` rows of consumer `?` processed more than `?` µs ago, oldest first. */
  readonly purgeBatch: string
  /** `consumer`. Rows: (n, oldest_age_ms). */
  readonly stats: string
}

const cache = new Map<string, MysqlInboxStatements>()

/** Builds (and caches) the MySQL/MariaDB statements of an inbox table. */
export function mysqlInboxStatements(table: TableRef): MysqlInboxStatements {
  const key = `${table.schema ?? ''}.${table.name}`
  const hit = cache.get(key)
  if (hit) return hit
  const t = mysqlQualifiedTable(table)
  const id = 'VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL'
  const statements: MysqlInboxStatements = {
    ddl: `CREATE TABLE IF NOT EXISTS ${t} (
  consumer ${id},
  message_id ${id},
  processed_at DATETIME(6) NOT NULL DEFAULT (${NOW}),
  PRIMARY KEY (consumer, message_id),
  KEY ${quoteMysqlIdent(inboxIndexName(table).slice(0, 64))} (consumer, processed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    claim: (guard?: string) =>
      guard
        ? `INSERT IGNORE INTO ${t} (consumer, message_id, processed_at) SELECT ?, ?, ${NOW} FROM DUAL WHERE ${guard}`
        : `INSERT IGNORE INTO ${t} (consumer, message_id, processed_at) VALUES (?, ?, ${NOW})`,
    purgeBatch: `DELETE FROM ${t} WHERE consumer = ? AND processed_at < DATE_SUB(${NOW}, INTERVAL ? MICROSECOND) ORDER BY processed_at LIMIT ?`,
    stats: `SELECT COUNT(*) AS n, TIMESTAMPDIFF(MICROSECOND, MIN(processed_at), ${NOW}) / 1000 AS oldest_age_ms FROM ${t} WHERE consumer = ?`,
  }
  cache.set(key, statements)
  return statements
}
