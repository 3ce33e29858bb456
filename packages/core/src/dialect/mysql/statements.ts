import type { Outbox, TableRef } from '../../outbox/define-outbox.js'

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

/**
 * A boolean SQL expression that is true only inside an open transaction, for MariaDB (10.3+):
 * `@@in_transaction` is 1 from `START TRANSACTION`/`BEGIN` (or XA START) to `COMMIT`/`ROLLBACK`,
 * and a session with `autocommit = 0` is always in a transaction (an implicit one that the next
 * COMMIT or ROLLBACK ends). MySQL has no `@@in_transaction`: it rejects the statement.
 */
export const MARIADB_TRANSACTION_GUARD = '(@@in_transaction = 1 OR @@autocommit = 0)'

/** Most rows one publish INSERT carries (8 placeholders each stay under the prepared-statement limit of 65,535). */
export const MYSQL_MAX_ROWS_PER_INSERT = 8_000

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
  /** Dead rows newest death first: topics filter, then with `after` the cursor `dead_ms, dead_ms, id`. */
  listDead(topics: number | undefined, after: boolean, limit: number): string
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

const NOW = 'UTC_TIMESTAMP(6)'
const EPOCH = `'1970-01-01 00:00:00'`
/** Epoch milliseconds of a DATETIME(6) column written in UTC (a DECIMAL; drivers may return it as a string). */
const epochMs = (column: string) => `TIMESTAMPDIFF(MICROSECOND, ${EPOCH}, ${column}) / 1000`

function marks(n: number): string {
  if (!Number.isInteger(n) || n < 1)
    throw new RangeError(`[outboxkit] [core] expected a list size >= 1, got ${n}`)
  return n === 1 ? '?' : `?${', ?'.repeat(n - 1)}`
}

function positiveInt(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 1)
    throw new RangeError(`[outboxkit] [core] ${what} must be an integer >= 1, got ${n}`)
  return n
}

/**
 * Caches the statements of a builder by shape. Bounded: at most 1,000 shapes, and only texts
 * under 32 KiB (a large batch's INSERT is cheaper to rebuild than to keep).
 */
function memo<A extends unknown[]>(build: (...args: A) => string): (...args: A) => string {
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

const cache = new Map<string, MysqlStatements>()

/** Builds (and caches) the MySQL/MariaDB statements for a table. */
export function mysqlStatements(table: TableRef): MysqlStatements {
  const cacheKey = `${table.schema ?? ''}.${table.name}`
  const hit = cache.get(cacheKey)
  if (hit) return hit
  const t = mysqlQualifiedTable(table)
  const names = mysqlOutboxNames(table)
  const keys = table.schema
    ? `${quoteMysqlIdent(table.schema)}.${quoteMysqlIdent(names.keysTable)}`
    : quoteMysqlIdent(names.keysTable)
  const q = quoteMysqlIdent
  // Column names follow the PostgreSQL table. MySQL has no partial index, so the claim's index is
  // on a generated column that is NULL for terminal rows (`due_at`), and `dedup_key` / `key` are
  // indexed through SHA-256 hashes: exact byte comparison (no trailing-space padding), and no
  // 3072-byte index limit on 1024-character keys.
  const createTable = `CREATE TABLE IF NOT EXISTS ${t} (
  id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  topic VARCHAR(255) NOT NULL,
  \`key\` VARCHAR(1024) NULL,
  payload JSON NOT NULL,
  headers JSON NOT NULL DEFAULT ('{}'),
  state VARCHAR(10) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'pending',
  attempts INT NOT NULL DEFAULT 0,
  available_at DATETIME(6) NOT NULL DEFAULT (${NOW}),
  created_at DATETIME(6) NOT NULL DEFAULT (${NOW}),
  dedup_key VARCHAR(1024) NULL,
  last_error MEDIUMTEXT NULL,
  seq BIGINT NULL,
  due_at DATETIME(6) AS (CASE WHEN state IN ('pending', 'processing') THEN available_at END) STORED,
  dedup_hash BINARY(32) AS (UNHEX(SHA2(dedup_key, 256))) STORED,
  key_hash BINARY(32) AS (CASE WHEN seq IS NOT NULL THEN UNHEX(SHA2(\`key\`, 256)) END) STORED,
  PRIMARY KEY (id),
  KEY ${q(names.due)} (due_at, id),
  UNIQUE KEY ${q(names.dedupKey)} (dedup_hash),
  KEY ${q(names.keySeq)} (key_hash, seq),
  CONSTRAINT ${q(names.stateCheck)} CHECK (state IN ('pending', 'processing', 'delivered', 'dead'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
  const createKeys = `CREATE TABLE IF NOT EXISTS ${keys} (
  key_hash BINARY(32) NOT NULL,
  \`key\` VARCHAR(1024) NOT NULL,
  seq BIGINT NOT NULL,
  PRIMARY KEY (key_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
  const plain = [createTable]
  const withKeys = [createTable, createKeys]
  const live = `state IN ('pending', 'processing')`
  const cols = (ordered: boolean) =>
    `id, topic, \`key\`, payload, headers, available_at, dedup_key${ordered ? ', seq' : ''}`
  const later = (us: string) => `DATE_ADD(${NOW}, INTERVAL ${us} MICROSECOND)`

  const insert = memo((rows: number, ordered: boolean, guard: string) => {
    positiveInt(rows, 'rows')
    const width = ordered ? 8 : 7
    if (!guard) {
      const row = `(?, ?, ?, ?, ?, ${later('?')}, ?${ordered ? ', ?' : ''})`
      return `INSERT INTO ${t} (${cols(ordered)}) VALUES ${Array(rows).fill(row).join(', ')}
ON DUPLICATE KEY UPDATE id = id`
    }
    // Guarded: INSERT ... SELECT from a derived table of the values, WHERE the guard holds. The
    // derived columns are named c0..c8 so `id = id` below is the table's column, unambiguously.
    const first = `SELECT ${Array.from({ length: width }, (_, i) => `? AS c${i}`).join(', ')}, 0 AS ord`
    const rest = Array.from({ length: rows - 1 }, (_, r) => `SELECT ${marks(width)}, ${r + 1}`)
    return `INSERT INTO ${t} (${cols(ordered)})
SELECT c0, c1, c2, c3, c4, ${later('c5')}, c6${ordered ? ', c7' : ''}
FROM (${[first, ...rest].join(' UNION ALL ')}) AS m
WHERE ${guard} ORDER BY ord
ON DUPLICATE KEY UPDATE id = id`
  })
  const dedupLookup = memo(
    (n: number) =>
      `SELECT id, dedup_key FROM ${t} WHERE dedup_hash IN (${Array(positiveInt(n, 'n')).fill('UNHEX(SHA2(?, 256))').join(', ')}) LOCK IN SHARE MODE`,
  )
  // Per key: `key, count`. Rows are locked in the order given (the caller sorts the keys), so
  // producers of overlapping key sets never wait on each other in a cycle.
  const lockKeys = memo((n: number, guard: string) => {
    positiveInt(n, 'keys')
    const first = 'SELECT ? AS c0, ? AS c1, 0 AS ord'
    const rest = Array.from({ length: n - 1 }, (_, r) => `SELECT ?, ?, ${r + 1}`)
    return `INSERT INTO ${keys} (key_hash, \`key\`, seq)
SELECT UNHEX(SHA2(c0, 256)), c0, c1 FROM (${[first, ...rest].join(' UNION ALL ')}) AS m
${guard ? `WHERE ${guard} ` : ''}ORDER BY ord
ON DUPLICATE KEY UPDATE seq = seq + VALUES(seq)`
  })
  const keySeqs = memo(
    (n: number) =>
      `SELECT \`key\`, seq FROM ${keys} WHERE key_hash IN (${Array(positiveInt(n, 'n')).fill('UNHEX(SHA2(?, 256))').join(', ')})`,
  )
  const rowColumns = (a = '') =>
    `${a}id AS id, ${a}topic AS topic, ${a}\`key\` AS \`key\`, CAST(${a}payload AS CHAR) AS payload, CAST(${a}headers AS CHAR) AS headers, ${a}attempts AS attempts, ${a}last_error AS last_error, ${epochMs(`${a}created_at`)} AS created_ms`
  const claimSelect = memo((topics: number, limit: number, continueAfterDead: number) => {
    positiveInt(limit, 'limit')
    const ordered = continueAfterDead >= 0
    // The head-of-key check reads the same table in a subquery: a locking clause of the outer
    // query does not lock (or skip) rows read by a subquery, so a predecessor locked by another
    // claim still counts; READ COMMITTED makes it see the latest committed state.
    const head = ordered
      ? `
  AND (c.seq IS NULL OR NOT EXISTS (
    SELECT 1 FROM ${t} AS p
    WHERE p.key_hash = c.key_hash AND p.seq < c.seq AND p.state <> 'delivered'${
      continueAfterDead > 0 ? ` AND (p.state <> 'dead' OR p.topic NOT IN (${marks(continueAfterDead)}))` : ''
    }
  ))`
      : ''
    return `SELECT ${rowColumns('c.')}${ordered ? ', c.seq IS NOT NULL AS ordered' : ''}
FROM ${t} AS c FORCE INDEX (${q(names.due)})
WHERE c.due_at <= ${NOW} AND c.topic IN (${marks(topics)})${head}
ORDER BY c.due_at, c.id
LIMIT ${limit}
FOR UPDATE SKIP LOCKED`
  })
  const claimProcessing = memo(
    (n: number) =>
      `UPDATE ${t} SET state = 'processing', attempts = attempts + 1, available_at = ${later('?')} WHERE id IN (${marks(n)})`,
  )
  const claimDead = memo(
    (n: number) => `UPDATE ${t} SET state = 'dead', available_at = ${NOW},
  last_error = CONCAT('lease expired after attempt ', attempts, ' of ', ?, ' without a result (the relay crashed or the handler hung)',
    COALESCE(CONCAT('; previous error: ', last_error), ''))
WHERE id IN (${marks(n)})`,
  )
  const lockProcessing = memo(
    (n: number) =>
      `SELECT id, attempts FROM ${t} WHERE id IN (${marks(n)}) AND state = 'processing' ORDER BY id FOR UPDATE`,
  )
  const deleteIds = memo((n: number) => `DELETE FROM ${t} WHERE id IN (${marks(n)})`)
  const settleUpdate = memo((n: number) => {
    const whens = Array(positiveInt(n, 'n')).fill('WHEN ? THEN ?').join(' ')
    return `UPDATE ${t} SET
  state = CASE id ${whens} END,
  available_at = DATE_ADD(${NOW}, INTERVAL (CASE id ${whens} END) MICROSECOND),
  last_error = COALESCE(CASE id ${whens} END, last_error)
WHERE id IN (${marks(n)})`
  })
  const extendLease = memo(
    (n: number) => `UPDATE ${t} SET available_at = ${later('?')} WHERE id IN (${marks(n)})`,
  )
  const purge = memo(
    (states: number) =>
      `DELETE FROM ${t} WHERE state IN (${marks(states)}) AND available_at <= DATE_SUB(${NOW}, INTERVAL ? MICROSECOND)`,
  )
  const filters = (ids: number | undefined, topics: number | undefined) =>
    `${ids === undefined ? '' : ids === 0 ? ' AND FALSE' : ` AND id IN (${marks(ids)})`}${
      topics === undefined ? '' : topics === 0 ? ' AND FALSE' : ` AND topic IN (${marks(topics)})`
    }`
  const redrive = memo(
    (ids: number | undefined, topics: number | undefined) =>
      `UPDATE ${t} SET state = 'pending', attempts = 0, available_at = ${NOW} WHERE state = 'dead'${filters(ids, topics)}`,
  )
  const discard = memo(
    (ids: number | undefined, topics: number | undefined) =>
      `DELETE FROM ${t} WHERE state = 'dead'${filters(ids, topics)}`,
  )
  const stats = memo(
    (states: number) => `SELECT topic, state, COUNT(*) AS n,
  TIMESTAMPDIFF(MICROSECOND, MIN(created_at), ${NOW}) / 1000 AS oldest_age_ms,
  TIMESTAMPDIFF(MICROSECOND, MIN(CASE WHEN ${live} AND available_at <= ${NOW} THEN available_at END), ${NOW}) / 1000 AS oldest_due_lag_ms
FROM ${t} WHERE state IN (${marks(states)}) GROUP BY topic, state`,
  )
  // Paged by (death time truncated to the millisecond, id), newest first, like PostgreSQL.
  const deadMs = `FLOOR(TIMESTAMPDIFF(MICROSECOND, ${EPOCH}, available_at) / 1000)`
  const listDead = memo(
    (
      topics: number | undefined,
      after: boolean,
      limit: number,
    ) => `SELECT ${rowColumns()}, ${deadMs} AS dead_ms
FROM ${t} WHERE state = 'dead'${filters(undefined, topics)}${after ? ` AND (${deadMs} < ? OR (${deadMs} = ? AND id < ?))` : ''}
ORDER BY dead_ms DESC, id DESC LIMIT ${positiveInt(limit, 'limit')}`,
  )
  const blockedKeys = memo(
    (
      continueAfterDead: number,
      topics: number | undefined,
      afterKey: boolean,
      includeRetrying: boolean,
      limit: number,
    ) => `WITH heads AS (
  SELECT \`key\`, key_hash, id, topic, state, attempts, last_error, seq,
    ${epochMs('available_at')} AS since_ms, ${epochMs('created_at')} AS created_ms,
    ROW_NUMBER() OVER (PARTITION BY key_hash ORDER BY seq) AS rn
  FROM ${t}
  WHERE key_hash IS NOT NULL AND state <> 'delivered'${
    continueAfterDead > 0 ? ` AND (state <> 'dead' OR topic NOT IN (${marks(continueAfterDead)}))` : ''
  }${afterKey ? ' AND `key` > ?' : ''}
)
SELECT h.\`key\`, h.id, h.topic, h.state, h.attempts, h.last_error, h.since_ms, h.created_ms,
  (SELECT COUNT(*) FROM ${t} AS w
   WHERE w.key_hash = h.key_hash AND w.seq > h.seq AND w.state IN ('pending', 'processing')) AS waiting
FROM heads AS h
WHERE h.rn = 1 AND (h.state = 'dead'${includeRetrying ? ` OR (h.state = 'pending' AND h.attempts > 0)` : ''})${
      topics === undefined ? '' : topics === 0 ? ' AND FALSE' : ` AND h.topic IN (${marks(topics)})`
    }
ORDER BY h.\`key\` LIMIT ${positiveInt(limit, 'limit')}`,
  )

  const statements: MysqlStatements = {
    table: t,
    keysTable: keys,
    ddl: `${createTable};\n`,
    keysDdl: `${createKeys};\n`,
    migrate: (ordered) => (ordered ? withKeys : plain),
    insert: (o) => insert(o.rows, o.ordered, o.guard ?? ''),
    dedupLookup,
    lockKeys: (n, guard) => lockKeys(n, guard ?? ''),
    keySeqs,
    claimSelect: (topics, limit, continueAfterDead) => claimSelect(topics, limit, continueAfterDead ?? -1),
    claimProcessing,
    claimDead,
    lockProcessing,
    deleteIds,
    settleUpdate,
    extendLease,
    purge,
    redrive,
    discard,
    stats,
    listDead,
    blockedKeys: (o) => blockedKeys(o.continueAfterDead, o.topics, o.afterKey, o.includeRetrying, o.limit),
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
