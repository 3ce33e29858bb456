import type { Outbox, TableRef } from '../../outbox/define-outbox.js'
import { mysqlAdminStatements } from './statements/admin.js'
import { mysqlClaimStatements } from './statements/claim.js'
import { mysqlDdlStatements } from './statements/ddl.js'
import { mysqlPublishStatements } from './statements/publish.js'
import { mysqlSettleStatements } from './statements/settle.js'
import { mysqlTable } from './statements/table.js'

// Every SQL statement of MySQL and MariaDB is written in ./statements/, one file per concept
// (ddl, publish, claim, settle, admin); this file is their one entry point, cached per table.

export { MARIADB_TRANSACTION_GUARD, MYSQL_MAX_ROWS_PER_INSERT } from './statements/publish.js'
export {
  type MysqlOutboxNames,
  mysqlOutboxNames,
  mysqlQualifiedTable,
  quoteMysqlIdent,
} from './statements/table.js'

/** Options of {@link MysqlStatements.insert}. */
export interface MysqlInsertOptions {
  /** Number of messages (rows), at most {@link MYSQL_MAX_ROWS_PER_INSERT}. */
  readonly rows: number
  /** The rows carry an explicit `seq` (messages of ordered topics, NULL for the others). */
  readonly ordered: boolean
  /** A boolean SQL expression (e.g. {@link MARIADB_TRANSACTION_GUARD}): rows are written only where it is true. */
  readonly guard?: string | undefined
}

/**
 * Every SQL statement outboxkit runs on MySQL 8+ and MariaDB 10.6+ for one table, with `?`
 * placeholders. Statements whose shape depends on a count (the rows of a batch, an `IN` list)
 * are functions of that count; their text is cached. Every time is the server's clock in UTC
 * (`UTC_TIMESTAMP(6)`), whatever the session's `time_zone`; epoch milliseconds are computed by
 * the server with `TIMESTAMPDIFF`.
 */
export interface MysqlStatements {
  /** The backquoted, qualified table name. */
  readonly table: string
  /** The backquoted, qualified companion table of ordered keys. */
  readonly keysTable: string
  /** Idempotent DDL of the outbox table (one `CREATE TABLE IF NOT EXISTS`), for users' migration tools. */
  readonly ddl: string
  /**
   * Idempotent DDL of the companion table of ordered keys (see {@link MysqlOutboxNames.keysTable}),
   * needed only by an outbox with `orderedTopics`.
   */
  readonly keysDdl: string
  /**
   * The statements `migrate` runs in order: the outbox table, then (for an outbox with ordered
   * topics) the keys table. `CREATE TABLE IF NOT EXISTS` is atomic on both servers, and every
   * index is created with its table (MySQL has no `CREATE INDEX IF NOT EXISTS`), so concurrent
   * migrations are safe without a lock.
   */
  migrate(ordered: boolean): readonly string[]
  /**
   * Publish: per row `id, topic, key, payload, headers, delay µs, dedup key` (and `seq` when
   * ordered). `ON DUPLICATE KEY UPDATE id = id` makes a taken `dedup_key` a no-op.
   */
  insert(options: MysqlInsertOptions): string
  /** `id, dedup_key` of the rows holding these `n` dedup keys (a locking read, so it sees the latest committed row). */
  dedupLookup(n: number): string
  /**
   * Locks ordered keys to commit and reserves their numbers: per key `key, count` (in a stable,
   * sorted order, so concurrent producers lock keys in the same order). A guard as in
   * {@link MysqlInsertOptions.guard}.
   */
  lockKeys(keys: number, guard?: string): string
  /** `key, seq` (the last number reserved) of these `n` keys. */
  keySeqs(n: number): string
  /**
   * The claim's locking read (run inside a short READ COMMITTED transaction): due rows of `topics`
   * topics in `(due_at, id)` order, `FOR UPDATE SKIP LOCKED`, at most `limit`. With
   * `continueAfterDead` (ordered claim), rows with a `seq` are taken only as the head of their
   * key; then the last parameters are the `continueAfterDead` topics.
   */
  claimSelect(topics: number, limit: number, continueAfterDead?: number): string
  /** Claims `n` locked rows for delivery: $1 lease µs, then the ids. */
  claimProcessing(n: number): string
  /** Dead-letters `n` locked rows at claim: $1 max attempts, then the ids. */
  claimDead(n: number): string
  /** `id, attempts` of the rows among these `n` ids still `processing`, locked (fence read of settle and extendLease). */
  lockProcessing(n: number): string
  /** Deletes `n` rows by id (delivered, `keepDelivered: false`). */
  deleteIds(n: number): string
  /**
   * Settles `n` rows by id: per row `id, state` then `id, delay µs` then `id, error` (NULL keeps
   * `last_error`), then the ids.
   */
  settleUpdate(n: number): string
  /** Extends the lease of `n` rows: $1 lease µs, then the ids. */
  extendLease(n: number): string
  /** Deletes rows in `states` states settled more than $last µs ago. */
  purge(states: number): string
  /** Dead rows back to pending with `attempts = 0`; `ids`/`topics`: `IN` list sizes, `undefined` for no filter. */
  redrive(ids?: number, topics?: number): string
  /** Deletes dead rows; filters as {@link MysqlStatements.redrive}. */
  discard(ids?: number, topics?: number): string
  /** Counts by topic and state of the rows in `states` states: (topic, state, n, oldest_age_ms, oldest_due_lag_ms). */
  stats(states: number): string
  /**
   * Dead rows newest death first: topics filter, with `searched` the search text four times, then
   * with `after` the cursor `dead_ms, dead_ms, id`.
   */
  listDead(topics: number | undefined, after: boolean, limit: number, searched: boolean): string
  /** Dead rows matching (topics, then the search text four times), at most `cap`: (n). */
  countDead(topics: number | undefined, searched: boolean, cap: number): string
  /**
   * Keys of ordered rows whose head is dead (or, with `includeRetrying`, retrying): parameters
   * are the `continueAfterDead` topics, then (with `afterKey`) the after key, then the head topics.
   */
  blockedKeys(options: {
    continueAfterDead: number
    topics: number | undefined
    afterKey: boolean
    includeRetrying: boolean
    limit: number
  }): string
}

const cache = new Map<string, MysqlStatements>()

/** Builds (and caches) the MySQL/MariaDB statements for a table. */
export function mysqlStatements(table: TableRef): MysqlStatements {
  const cacheKey = `${table.schema ?? ''}.${table.name}`
  const hit = cache.get(cacheKey)
  if (hit) return hit
  const names = mysqlTable(table)
  const statements: MysqlStatements = {
    table: names.t,
    keysTable: names.keys,
    ...mysqlDdlStatements(names),
    ...mysqlPublishStatements(names),
    ...mysqlClaimStatements(names),
    ...mysqlSettleStatements(names),
    ...mysqlAdminStatements(names),
  }
  cache.set(cacheKey, statements)
  return statements
}

/**
 * The DDL that creates an outbox table (and, when the outbox has ordered topics, its companion
 * table of ordered keys) on MySQL 8+ or MariaDB 10.6+, for your own migration tool. Idempotent.
 *
 * @example
 * ```ts
 * import { mysqlOutboxDdl } from '@outboxkit/core'
 * fs.writeFileSync('migrations/001_outbox.sql', mysqlOutboxDdl(outbox))
 * ```
 */
export function mysqlOutboxDdl(outbox: Pick<Outbox, 'table' | 'orderedTopics'>): string {
  const sql = mysqlStatements(outbox.table)
  return outbox.orderedTopics.size > 0 ? `${sql.ddl}${sql.keysDdl}` : sql.ddl
}
