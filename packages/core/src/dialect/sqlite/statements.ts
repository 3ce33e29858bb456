import type { Outbox, TableRef } from '../../outbox/define-outbox.js'
import { outboxIndexNames, qualifiedTable, quoteIdent } from '../sql-identifiers.js'

/**
 * SQLite's own clock in epoch milliseconds, as an SQL expression. `'now'` is the same for every
 * use within one statement, so all the timestamps a statement writes agree. Works on every SQLite
 * version (no `unixepoch('subsec')`, which needs 3.42).
 */
export const SQLITE_NOW_MS = `CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)`

/**
 * One SQLite statement with positional `?` parameters (the one placeholder every SQLite driver
 * understands) and the name of the argument each `?` takes, in order. Bind with {@link bindSqlite}.
 */
export interface SqliteSql {
  /** SQL text with `?` placeholders. */
  readonly sql: string
  /** The argument name of each placeholder, in order (a name may repeat). */
  readonly params: readonly string[]
}

/** Compiles SQL written with `:name` placeholders into a {@link SqliteSql} with `?` placeholders. */
function compile(text: string): SqliteSql {
  const params: string[] = []
  const sql = text.replace(/:([a-z][a-z_]*)\b/g, (_m, name: string) => {
    params.push(name)
    return '?'
  })
  return { sql, params }
}

/**
 * The positional parameters of `statement` from named `args`. Booleans become 1 / 0 and
 * `undefined` becomes `null` (SQLite drivers bind neither).
 *
 * @throws Error when an argument the statement needs is missing (a bug in the caller).
 */
export function bindSqlite(statement: SqliteSql, args: Readonly<Record<string, unknown>>): unknown[] {
  return statement.params.map((name) => {
    if (!(name in args)) throw new Error(`[outboxkit] [core] SQLite statement argument :${name} is missing`)
    const v = args[name]
    return v === undefined ? null : typeof v === 'boolean' ? (v ? 1 : 0) : v
  })
}

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
  /** `topics` (JSON array or null), `limit`, and the cursor `after_ms`, `after_id` (null for the first page). */
  readonly listDead: SqliteSql
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
  const t = qualifiedTable(table)
  const now = SQLITE_NOW_MS
  const live = `state IN ('pending', 'processing')`
  const names = outboxIndexNames(table)
  // SQLite names an index in the table's database: `"schema"."index" ON "table"`.
  const index = (name: string) =>
    table.schema ? `${quoteIdent(table.schema)}.${quoteIdent(name)}` : quoteIdent(name)
  const bare = quoteIdent(table.name)
  const ddl = [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id TEXT PRIMARY KEY NOT NULL,
  topic TEXT NOT NULL,
  key TEXT,
  payload TEXT NOT NULL,
  headers TEXT NOT NULL DEFAULT '{}',
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'processing', 'delivered', 'dead')),
  attempts INTEGER NOT NULL DEFAULT 0,
  available_at INTEGER NOT NULL DEFAULT (${now}),
  created_at INTEGER NOT NULL DEFAULT (${now}),
  dedup_key TEXT,
  last_error TEXT,
  seq INTEGER
)`,
    `CREATE INDEX IF NOT EXISTS ${index(names.due)} ON ${bare} (available_at, id) WHERE ${live}`,
    `CREATE UNIQUE INDEX IF NOT EXISTS ${index(names.dedupKey)} ON ${bare} (dedup_key) WHERE dedup_key IS NOT NULL`,
    `CREATE INDEX IF NOT EXISTS ${index(names.keySeq)} ON ${bare} (key, seq) WHERE seq IS NOT NULL AND state <> 'delivered'`,
  ].join(';\n')

  // Ordered messages (docs/ordering.md): SQLite has one writer at a time, and a statement that
  // writes always reads the latest committed state (a transaction whose snapshot is older cannot
  // take the write lock: SQLITE_BUSY_SNAPSHOT). So the key's highest `seq` read by the INSERT
  // itself, plus one, is greater than the seq of every message of the key committed before, and
  // no other producer can write until this transaction ends: `seq` order is commit order, per key.
  const nextSeq = (keyExpr: string) =>
    `(SELECT coalesce(max(p.seq), 0) FROM ${t} AS p WHERE p.key = ${keyExpr} AND p.seq IS NOT NULL AND p.state <> 'delivered')`
  const columns = '(id, topic, key, payload, headers, available_at, created_at, dedup_key, seq)'
  const conflict = 'ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL DO NOTHING RETURNING id'
  const publishOne = compile(`INSERT INTO ${t} ${columns}
VALUES (:id, :topic, :key, :payload, :headers, ${now} + :delay_ms, ${now}, :dedup_key, NULL)
${conflict}`)
  const publishOneOrdered = compile(`INSERT INTO ${t} ${columns}
VALUES (:id, :topic, :key, :payload, :headers, ${now} + :delay_ms, ${now}, :dedup_key, ${nextSeq(':key')} + 1)
${conflict}`)
  const field = (i: number) => `json_extract(m.value, '$[${i}]')`
  // `WHERE true` keeps `ON CONFLICT` from parsing as a join constraint (an INSERT ... SELECT rule).
  const publishMany = compile(`INSERT INTO ${t} ${columns}
SELECT ${field(0)}, ${field(1)}, ${field(2)}, ${field(3)}, ${field(4)}, ${now} + ${field(5)}, ${now}, ${field(6)},
  CASE WHEN ${field(7)} IS NULL THEN NULL ELSE ${nextSeq(field(2))} + ${field(7)} END
FROM json_each(:messages) AS m WHERE true
${conflict}`)
  const dedupLookup = compile(
    `SELECT id, dedup_key FROM ${t} WHERE dedup_key IN (SELECT value FROM json_each(:dedup_keys))`,
  )

  // The head-of-key check for ordered rows: no row of the same key with a smaller seq that is
  // still to deliver (pending, processing) or dead (unless its topic lets a dead head be skipped).
  // Served by the partial (key, seq) index. The IN subquery is evaluated before the UPDATE writes,
  // so a claim that takes a head cannot take its successor in the same statement.
  const claimSql = (ordered: boolean) =>
    compile(`UPDATE ${t} AS o SET
  state = CASE WHEN o.attempts >= :max_attempts THEN 'dead' ELSE 'processing' END,
  attempts = CASE WHEN o.attempts >= :max_attempts THEN o.attempts ELSE o.attempts + 1 END,
  available_at = CASE WHEN o.attempts >= :max_attempts THEN ${now} ELSE ${now} + :lease_ms END,
  last_error = CASE WHEN o.attempts >= :max_attempts
    THEN 'lease expired after attempt ' || o.attempts || ' of ' || :max_attempts || ' without a result (the relay crashed or the handler hung)'
      || COALESCE('; previous error: ' || o.last_error, '')
    ELSE o.last_error END
WHERE o.id IN (
  SELECT c.id FROM ${t} AS c
  WHERE c.${live} AND c.available_at <= ${now} AND c.topic IN (SELECT value FROM json_each(:topics))${
    ordered
      ? `
    AND (c.seq IS NULL OR NOT EXISTS (
      SELECT 1 FROM ${t} AS p
      WHERE p.key = c.key AND p.seq < c.seq AND p.seq IS NOT NULL AND p.state <> 'delivered'
        AND (p.state <> 'dead' OR p.topic NOT IN (SELECT value FROM json_each(:continue_topics)))
    ))`
      : ''
  }
  ORDER BY c.available_at, c.id
  LIMIT :limit
)
RETURNING id, topic, key, payload, headers, attempts, state, created_at AS created_ms, last_error${
      ordered ? ', seq IS NOT NULL AS ordered' : ''
    }`)
  const claim = claimSql(false)
  const claimOrdered = claimSql(true)

  const settlements = `SELECT json_extract(s.value, '$[0]') AS id, json_extract(s.value, '$[1]') AS attempts,
    json_extract(s.value, '$[2]') AS outcome, json_extract(s.value, '$[3]') AS delay_ms, json_extract(s.value, '$[4]') AS error
  FROM json_each(:settlements) AS s`
  // rowid IN (a join that looks every settled id up by primary key): never a scan of the table.
  const settleDelete = compile(`DELETE FROM ${t} WHERE rowid IN (
  SELECT o.rowid FROM (${settlements}) AS s JOIN ${t} AS o ON o.id = s.id
  WHERE s.outcome = 'delivered' AND o.attempts = s.attempts AND o.state = 'processing'
)
RETURNING id`)
  const settleUpdate = compile(`UPDATE ${t} AS o SET
  state = CASE s.outcome WHEN 'retry' THEN 'pending' WHEN 'dead' THEN 'dead' ELSE 'delivered' END,
  available_at = CASE s.outcome WHEN 'retry' THEN ${now} + s.delay_ms ELSE ${now} END,
  last_error = CASE s.outcome WHEN 'delivered' THEN o.last_error ELSE s.error END
FROM (${settlements}) AS s
WHERE o.id = s.id AND o.attempts = s.attempts AND o.state = 'processing' AND (:keep_delivered OR s.outcome <> 'delivered')
RETURNING id`)
  const extendLease = compile(`UPDATE ${t} AS o SET available_at = ${now} + :lease_ms
FROM (SELECT json_extract(r.value, '$[0]') AS id, json_extract(r.value, '$[1]') AS attempts FROM json_each(:rows) AS r) AS s
WHERE o.id = s.id AND o.attempts = s.attempts AND o.state = 'processing'
RETURNING id`)
  const purge = compile(
    `DELETE FROM ${t} WHERE state IN (SELECT value FROM json_each(:states)) AND available_at <= ${now} - :older_than_ms`,
  )
  const filter = `(:ids IS NULL OR id IN (SELECT value FROM json_each(:ids))) AND (:topics IS NULL OR topic IN (SELECT value FROM json_each(:topics)))`
  const redrive = compile(
    `UPDATE ${t} SET state = 'pending', attempts = 0, available_at = ${now} WHERE state = 'dead' AND ${filter}`,
  )
  const discard = compile(`DELETE FROM ${t} WHERE state = 'dead' AND ${filter}`)
  const stats = compile(`SELECT topic, state, count(*) AS n,
  ${now} - min(created_at) AS oldest_age_ms,
  ${now} - min(CASE WHEN ${live} AND available_at <= ${now} THEN available_at END) AS oldest_due_lag_ms
FROM ${t} WHERE state IN (SELECT value FROM json_each(:states)) GROUP BY topic, state`)
  // Paged by (death time in ms, id), newest first: the cursor is the last row's (dead_ms, id).
  const listDead = compile(`SELECT id, topic, key, payload, headers, attempts, last_error,
  created_at AS created_ms, available_at AS dead_ms
FROM ${t} WHERE state = 'dead' AND (:topics IS NULL OR topic IN (SELECT value FROM json_each(:topics)))
  AND (:after_ms IS NULL OR (available_at, id) < (:after_ms, :after_id))
ORDER BY available_at DESC, id DESC LIMIT :limit`)
  const blockedKeys = compile(`WITH heads AS (
  SELECT key, id, topic, state, attempts, last_error, seq, available_at AS since_ms, created_at AS created_ms,
    row_number() OVER (PARTITION BY key ORDER BY seq) AS rn
  FROM ${t}
  WHERE seq IS NOT NULL AND state <> 'delivered'
    AND (state <> 'dead' OR topic NOT IN (SELECT value FROM json_each(:continue_topics)))
    AND (:after_key IS NULL OR key > :after_key)
)
SELECT h.key AS key, h.id AS id, h.topic AS topic, h.state AS state, h.attempts AS attempts, h.last_error AS last_error,
  h.since_ms AS since_ms, h.created_ms AS created_ms,
  (SELECT count(*) FROM ${t} AS w
   WHERE w.key = h.key AND w.seq > h.seq AND w.seq IS NOT NULL AND w.state <> 'delivered' AND w.${live}) AS waiting
FROM heads AS h
WHERE h.rn = 1 AND (h.state = 'dead' OR (:include_retrying AND h.state = 'pending' AND h.attempts > 0))
  AND (:topics IS NULL OR h.topic IN (SELECT value FROM json_each(:topics)))
ORDER BY h.key LIMIT :limit`)

  const statements: SqliteStatements = {
    ddl,
    migrate: ddl,
    publishOne,
    publishOneOrdered,
    publishMany,
    dedupLookup,
    claim,
    claimOrdered,
    settleDelete,
    settleUpdate,
    extendLease,
    purge,
    redrive,
    stats,
    listDead,
    discard,
    blockedKeys,
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
