import type { TableRef } from '../../../outbox/define-outbox.js'

// Names and SQL helpers every MySQL statement builder shares.

/** Quotes a validated identifier for MySQL and MariaDB (backquotes). */
export function quoteMysqlIdent(name: string): string {
  return `\`${name.replace(/`/g, '``')}\``
}

/** The backquoted table name, qualified by its database when the outbox names one (`'app.outbox'`). */
export function mysqlQualifiedTable(table: TableRef): string {
  return table.schema
    ? `${quoteMysqlIdent(table.schema)}.${quoteMysqlIdent(table.name)}`
    : quoteMysqlIdent(table.name)
}

/** The names MySQL gives the outbox table's companions, as {@link mysqlStatements} creates them. */
export interface MysqlOutboxNames {
  /** Index on `(due_at, id)`: serves the claim (`due_at` is `available_at` for pending and processing rows, else NULL). */
  readonly due: string
  /** Unique index on `dedup_hash` (SHA-256 of `dedup_key`): backs producer-side deduplication. */
  readonly dedupKey: string
  /** Index on `(key_hash, seq)` of messages of ordered topics: serves the claim's head-of-key check. */
  readonly keySeq: string
  /** The CHECK constraint on `state`. */
  readonly stateCheck: string
  /**
   * The companion table of ordered keys: one row per key with its last `seq`. Publishing an
   * ordered message upserts its key's row first, and that row lock, held to commit, makes the
   * producers of one key number their messages in commit order (docs/ordering.md).
   */
  readonly keysTable: string
}

/** The index, constraint and companion-table names of an outbox table on MySQL (64-character identifiers). */
export function mysqlOutboxNames(table: TableRef): MysqlOutboxNames {
  const derive = (suffix: string) => `${table.name.slice(0, 64 - suffix.length - 1)}_${suffix}`
  return {
    due: derive('due_idx'),
    dedupKey: derive('dedup_key_idx'),
    keySeq: derive('key_seq_idx'),
    stateCheck: derive('state_check'),
    keysTable: derive('keys'),
  }
}

/** What every MySQL statement builder needs to know about one outbox table. */
export interface MysqlTable {
  /** The backquoted, qualified table. */
  readonly t: string
  /** The backquoted, qualified companion table of ordered keys. */
  readonly keys: string
  /** The index, constraint and companion-table names. */
  readonly names: MysqlOutboxNames
}

/** The names and quoted forms of `table` for the statement builders. */
export function mysqlTable(table: TableRef): MysqlTable {
  const names = mysqlOutboxNames(table)
  const keys = table.schema
    ? `${quoteMysqlIdent(table.schema)}.${quoteMysqlIdent(names.keysTable)}`
    : quoteMysqlIdent(names.keysTable)
  return { t: mysqlQualifiedTable(table), keys, names }
}

/** The server's clock in UTC, whatever the session's `time_zone`: every time outboxkit writes. */
export const NOW = 'UTC_TIMESTAMP(6)'
/** The epoch as a DATETIME literal, for `TIMESTAMPDIFF`. */
export const EPOCH = `'1970-01-01 00:00:00'`
/** Epoch milliseconds of a DATETIME(6) column written in UTC (a DECIMAL; drivers may return it as a string). */
export const epochMs = (column: string) => `TIMESTAMPDIFF(MICROSECOND, ${EPOCH}, ${column}) / 1000`

/** `n` comma-separated `?` placeholders (n >= 1). */
export function marks(n: number): string {
  if (!Number.isInteger(n) || n < 1)
    throw new RangeError(`[outboxkit] [core] expected a list size >= 1, got ${n}`)
  return n === 1 ? '?' : `?${', ?'.repeat(n - 1)}`
}

/** `n` unchanged when it is an integer >= 1; a statement builder's guard against a caller's bug. */
export function count(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 1)
    throw new RangeError(`[outboxkit] [core] ${what} must be an integer >= 1, got ${n}`)
  return n
}

/**
 * Caches the statements of a builder by shape. Bounded: at most 1,000 shapes, and only texts
 * under 32 KiB (a large batch's INSERT is cheaper to rebuild than to keep).
 */
export function memo<A extends unknown[]>(build: (...args: A) => string): (...args: A) => string {
  const cache = new Map<string, string>()
  return (...args: A) => {
    const k = args.join('\u0000')
    let hit = cache.get(k)
    if (hit === undefined) {
      hit = build(...args)
      if (hit.length < 32_768) {
        if (cache.size >= 1_000) cache.clear()
        cache.set(k, hit)
      }
    }
    return hit
  }
}

/** `now + us` microseconds, in the server's UTC clock. */
export const later = (us: string) => `DATE_ADD(${NOW}, INTERVAL ${us} MICROSECOND)`

/** The columns of a delivered or dead row as the backends read them (`a`: a table alias with its dot). */
export const rowColumns = (a = '') =>
  `${a}id AS id, ${a}topic AS topic, ${a}\`key\` AS \`key\`, CAST(${a}payload AS CHAR) AS payload, CAST(${a}headers AS CHAR) AS headers, ${a}attempts AS attempts, ${a}last_error AS last_error, ${epochMs(`${a}created_at`)} AS created_ms`

/** `AND id IN (...)` and `AND topic IN (...)` for the given placeholder counts (0: matches nothing; undefined: no filter). */
export const idTopicFilters = (ids: number | undefined, topics: number | undefined): string =>
  `${ids === undefined ? '' : ids === 0 ? ' AND FALSE' : ` AND id IN (${marks(ids)})`}${
    topics === undefined ? '' : topics === 0 ? ' AND FALSE' : ` AND topic IN (${marks(topics)})`
  }`
