import type { TableRef } from '../../outbox/define-outbox.js'
import { outboxIndexNames, qualifiedTable, quoteIdent } from '../sql-identifiers.js'

/** Every SQL statement outboxkit runs on PostgreSQL for one table. Parameters are positional. */
export interface PostgresStatements {
  /** Idempotent DDL (multi-statement), for users' migration tools. */
  readonly ddl: string
  /** `ddl` behind a transaction-scoped advisory lock, so concurrent `migrate` calls do not race. */
  readonly migrate: string
  /** Publish one message: $1 id, $2 topic, $3 key, $4 payload json text, $5 headers json text, $6 delay ms, $7 dedup key, $8 channel (or '' for no wake). Rows: (id, inserted). */
  readonly publishOne: string
  /** Publish many: $1..$7 arrays of the same, $8 channel. Rows: (id, dedup_key, inserted). */
  readonly publishMany: string
  /**
   * `publishOne` that writes (and wakes) only while {@link POSTGRES_TRANSACTION_MARKER}, sent
   * just before on the same connection, is still in force; otherwise it writes nothing and returns
   * one row whose `dedup_key` is {@link POSTGRES_NOT_IN_TRANSACTION}.
   */
  readonly publishOneGuarded: string
  /** `publishMany`, guarded like {@link PostgresStatements.publishOneGuarded}. */
  readonly publishManyGuarded: string
  /**
   * `publishOne` for a message without a `dedupKey` (same parameters, same rows): a plain
   * INSERT, without `ON CONFLICT` (whose speculative insertion costs a lock and a WAL record per
   * row) and without the lookup of an existing `dedupKey`.
   */
  readonly publishOnePlain: string
  /** `publishMany` for messages none of which has a `dedupKey`, plain like {@link PostgresStatements.publishOnePlain}. */
  readonly publishManyPlain: string
  /** `publishOneGuarded` for a message without a `dedupKey`: no `ON CONFLICT`, no lookup of an existing `dedupKey`. */
  readonly publishOneGuardedPlain: string
  /** `publishManyGuarded` for messages none of which has a `dedupKey`, like {@link PostgresStatements.publishOneGuardedPlain}. */
  readonly publishManyGuardedPlain: string
  /** $1 topics[], $2 limit, $3 lease ms, $4 max attempts. */
  readonly claim: string
  /**
   * $1 ids[], $2 attempts[], $3 outcomes[], $4 delay ms[], $5 errors[], $6 keep delivered. Rows:
   * the ids whose settlement did not apply (fenced out); usually none.
   */
  readonly settle: string
  /**
   * `settle` for a batch whose every outcome is `delivered`, with `keepDelivered: false` (the
   * common case): one fenced DELETE. $1 ids[], $2 attempts[]. Rows: the ids not applied.
   */
  readonly settleDelivered: string
  /** $1 ids[], $2 attempts[], $3 lease ms. */
  readonly extendLease: string
  /** $1 states[], $2 older than ms. */
  readonly purge: string
  /** $1 ids[] or null, $2 topics[] or null. */
  readonly redrive: string
  /**
   * Read-only counts by topic and state: $1 states[]. Rows: (topic, state, n, oldest_age_ms,
   * oldest_due_lag_ms).
   */
  readonly stats: string
  /**
   * Dead rows, newest death first: $1 topics[] or null, $2 limit, then the cursor: $3 `dead_ms`
   * and $4 `id` of the last row of the previous page (both null for the first page).
   */
  readonly listDead: string
  /** Deletes dead rows: $1 ids[] or null, $2 topics[] or null. */
  readonly discard: string
  /**
   * `publishOne` for a message of an ordered topic: takes the transaction-scoped advisory lock on
   * (table, key) first, then numbers the row from the table's sequence (`seq`). Same parameters.
   */
  readonly publishOneOrdered: string
  /** `publishMany` with ordered messages: $9 the ordered topics (text[]); their keys are locked in sorted order first. */
  readonly publishManyOrdered: string
  /** `publishOneOrdered`, guarded like {@link PostgresStatements.publishOneGuarded}. */
  readonly publishOneOrderedGuarded: string
  /** `publishManyOrdered`, guarded like {@link PostgresStatements.publishOneGuarded}. */
  readonly publishManyOrderedGuarded: string
  /**
   * `claim` that takes only the head of each key among ordered rows (`seq IS NOT NULL`): $1..$4 as
   * `claim`, $5 the topics whose dead messages do not block their key (text[]).
   */
  readonly claimOrdered: string
  /**
   * Keys of ordered rows whose head (lowest `seq` not delivered) is dead, or with $5 also
   * retrying: $1 topics whose dead messages do not block (text[]), $2 head topics[] or null,
   * $3 after key or null, $4 limit, $5 include retrying heads.
   */
  readonly blockedKeys: string
}

/**
 * Marks the current transaction for a guarded publish statement. A transaction-local setting: in
 * autocommit it is gone when its own statement ends, so a guarded INSERT sent after it only
 * writes if both run in the same open transaction. Drivers that pipeline (postgres.js) send the
 * two together, so a transaction check costs no extra round trip and cannot be raced by a COMMIT.
 */
export const POSTGRES_TRANSACTION_MARKER = "SELECT set_config('outboxkit.in_tx', 'on', true)"

/** The `dedup_key` value of the row a guarded publish statement returns when it was not in a transaction. */
export const POSTGRES_NOT_IN_TRANSACTION = 'outboxkit:not-in-transaction'

/**
 * The storage parameters `migrate` gives the outbox table: autovacuum tuned for a queue table,
 * whose size swings from empty to a burst of a million rows and where every delivered message
 * leaves dead tuples. Vacuum and analyse after a fixed 10 000 changed rows instead of 20 % / 10 %
 * of a size that keeps changing, and let vacuum run unthrottled (a healthy outbox is small).
 * See docs/operations.md#autovacuum.
 */
export const OUTBOX_STORAGE_PARAMETERS =
  'autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000, autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 10000'

const cache = new Map<string, PostgresStatements>()

/** Builds (and caches) the PostgreSQL statements for a table. */
export function postgresStatements(table: TableRef): PostgresStatements {
  const cacheKey = `${table.schema ?? ''}.${table.name}`
  const hit = cache.get(cacheKey)
  if (hit) return hit
  const t = qualifiedTable(table)
  const live = `state IN ('pending', 'processing')`
  const indexes = outboxIndexNames(table)
  const sequence = table.schema
    ? `${quoteIdent(table.schema)}.${quoteIdent(indexes.sequence)}`
    : quoteIdent(indexes.sequence)
  const ddl = [
    `CREATE TABLE IF NOT EXISTS ${t} (
  id uuid PRIMARY KEY,
  topic text NOT NULL,
  key text,
  payload jsonb NOT NULL,
  headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'processing', 'delivered', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  available_at timestamptz NOT NULL DEFAULT now(),
  created_at timestamptz NOT NULL DEFAULT now(),
  dedup_key text,
  last_error text
) WITH (${OUTBOX_STORAGE_PARAMETERS})`,
    // A table created before these parameters existed gets them too, unless someone set any
    // storage parameter on it (reloptions not null): a re-run never overrides a DBA's choice.
    `DO $outboxkit$ BEGIN IF (SELECT reloptions FROM pg_class WHERE oid = ${literal(t)}::regclass) IS NULL THEN ALTER TABLE ${t} SET (${OUTBOX_STORAGE_PARAMETERS}); END IF; END $outboxkit$`,
    `CREATE INDEX IF NOT EXISTS ${quoteIdent(indexes.due)} ON ${t} (available_at, id) WHERE ${live}`,
    `CREATE UNIQUE INDEX IF NOT EXISTS ${quoteIdent(indexes.dedupKey)} ON ${t} (dedup_key) WHERE dedup_key IS NOT NULL`,
    // Per-key ordering (docs/ordering.md). ADD COLUMN IF NOT EXISTS upgrades a table created
    // before it; a nullable column without default is added without rewriting the table.
    `ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS seq bigint`,
    `CREATE SEQUENCE IF NOT EXISTS ${sequence} OWNED BY ${t}.seq`,
    `CREATE INDEX IF NOT EXISTS ${quoteIdent(indexes.keySeq)} ON ${t} (key, seq) WHERE seq IS NOT NULL AND state <> 'delivered'`,
  ].join(';\n')
  const migrate = `SELECT pg_advisory_xact_lock(hashtext(${literal(`outboxkit:migrate:${cacheKey}`)}));\n${ddl}`
  // Ordered messages: the key's transaction-scoped advisory lock is taken in a MATERIALIZED CTE
  // that the INSERT's rows are joined with, so no row is numbered (nextval) before every lock of
  // the statement is held. Concurrent producers of a key therefore number their rows in the order
  // they commit (the lock is released at commit); see docs/ordering.md.
  const keyLock = (key: string) => `hashtextextended(${literal(`outboxkit:key:${cacheKey}:`)} || ${key}, 0)`
  const nextSeq = `nextval(${literal(sequence)}::regclass)`
  const publish = (many: boolean, guarded: boolean, ordered = false, dedup = true) => {
    // Guarded: write only when the transaction marker (POSTGRES_TRANSACTION_MARKER, sent just
    // before on the same connection) is still set, i.e. the marker's transaction still runs.
    const ok = guarded ? 'guard.ok' : 'true'
    const from = guarded ? ' FROM guard' : ''
    const lock = !ordered
      ? ''
      : many
        ? `lk AS MATERIALIZED (
  SELECT count(pg_advisory_xact_lock(h)) AS n FROM (
    SELECT DISTINCT ${keyLock('key')} AS h FROM m${guarded ? ', guard' : ''}
    WHERE ${guarded ? 'guard.ok AND ' : ''}key IS NOT NULL AND topic = ANY($9::text[]) ORDER BY 1
  ) AS k
)`
        : `lk AS MATERIALIZED (SELECT count(pg_advisory_xact_lock(${keyLock('$3::text')})) AS n${guarded ? ' FROM guard WHERE guard.ok' : ''})`
    const seqColumn = ordered ? ', seq' : ''
    const seqValue = !ordered
      ? ''
      : many
        ? `, CASE WHEN topic = ANY($9::text[]) THEN ${nextSeq} END`
        : `, ${nextSeq}`
    const ctes = [
      guarded
        ? `guard AS (SELECT current_setting('outboxkit.in_tx', true) IS NOT DISTINCT FROM 'on' AS ok)`
        : '',
      many
        ? `m AS (
  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[], $7::text[])
    WITH ORDINALITY AS m(id, topic, key, payload, headers, delay_ms, dedup_key, ord)
)`
        : '',
      lock,
      `ins AS (
  INSERT INTO ${t} (id, topic, key, payload, headers, available_at, dedup_key${seqColumn})
  ${
    many
      ? `SELECT id, topic, key, payload::jsonb, headers::jsonb, now() + delay_ms * interval '1 millisecond', dedup_key${seqValue} FROM m${ordered ? ' CROSS JOIN lk' : ''}${guarded ? ', guard WHERE guard.ok' : ''} ORDER BY ord`
      : `SELECT $1::uuid, $2::text, $3::text, $4::text::jsonb, $5::text::jsonb, now() + $6::float8 * interval '1 millisecond', $7::text${seqValue}${
          ordered ? ` FROM lk${guarded ? ', guard' : ''}` : from
        }${guarded ? ' WHERE guard.ok' : ''}`
  }${dedup ? '\n  ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL DO NOTHING' : ''}
  RETURNING id
)`,
    ].filter(Boolean)
    const existing = many ? 'dedup_key = ANY($7::text[])' : '$7::text IS NOT NULL AND dedup_key = $7::text'
    return `WITH ${ctes.join(', ')}
SELECT id::text AS id, NULL::text AS dedup_key, true AS inserted FROM ins
${dedup ? `UNION ALL SELECT o.id::text, o.dedup_key, false FROM ${t} AS o${guarded ? ', guard' : ''} WHERE ${ok} AND ${existing.replaceAll('dedup_key =', 'o.dedup_key =')}\n` : ''}UNION ALL SELECT NULL, NULL, NULL${from} WHERE CASE WHEN ${ok} AND $8::text <> '' THEN (SELECT true FROM (SELECT pg_notify($8::text, '')) AS wake) ELSE false END${
      guarded
        ? `
UNION ALL SELECT NULL, '${POSTGRES_NOT_IN_TRANSACTION}', false FROM guard WHERE NOT guard.ok`
        : ''
    }`
  }
  // No dedupKey, no ordering, no guard: a plain INSERT. Its WHERE names no column, so PostgreSQL
  // tests it once per statement: the NOTIFY is queued once, however many rows.
  const wake = `WHERE CASE WHEN $8::text <> '' THEN (SELECT true FROM (SELECT pg_notify($8::text, '')) AS wake) ELSE true END`
  const plain = (
    many: boolean,
  ) => `INSERT INTO ${t} (id, topic, key, payload, headers, available_at, dedup_key)
${
  many
    ? `SELECT id, topic, key, payload::jsonb, headers::jsonb, now() + delay_ms * interval '1 millisecond', dedup_key
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[], $7::text[])
  WITH ORDINALITY AS m(id, topic, key, payload, headers, delay_ms, dedup_key, ord)
${wake}
ORDER BY ord`
    : `SELECT $1::uuid, $2::text, $3::text, $4::text::jsonb, $5::text::jsonb, now() + $6::float8 * interval '1 millisecond', $7::text
${wake}`
}
RETURNING id::text AS id, NULL::text AS dedup_key, true AS inserted`
  const publishOnePlain = plain(false)
  const publishManyPlain = plain(true)
  const publishOne = publish(false, false)
  const publishMany = publish(true, false)
  const publishOneGuarded = publish(false, true)
  const publishOneGuardedPlain = publish(false, true, false, false)
  const publishManyGuardedPlain = publish(true, true, false, false)
  const publishManyGuarded = publish(true, true)
  const publishOneOrdered = publish(false, false, true)
  const publishManyOrdered = publish(true, false, true)
  const publishOneOrderedGuarded = publish(false, true, true)
  const publishManyOrderedGuarded = publish(true, true, true)
  // The head-of-key check for ordered rows: no row of the same key with a smaller seq that is
  // still to deliver (pending, processing) or dead (unless its topic lets a dead head be skipped).
  // Served by the partial (key, seq) index: one short index probe per candidate.
  //
  // The due rows are chosen (and locked) by a subquery that PostgreSQL runs once as an InitPlan;
  // the UPDATE then finds them by primary key (`id = ANY(ARRAY(...))`), whatever the statistics
  // say. Joining a CTE instead let the planner pick a hash join over a sequential scan of the whole
  // table (docs/performance.md#claim-plans-statistics-and-autovacuum).
  const claimSql = (ordered: boolean) => `UPDATE ${t} AS o SET
  state = CASE WHEN o.attempts >= $4 THEN 'dead' ELSE 'processing' END,
  attempts = CASE WHEN o.attempts >= $4 THEN o.attempts ELSE o.attempts + 1 END,
  available_at = CASE WHEN o.attempts >= $4 THEN now() ELSE now() + $3::float8 * interval '1 millisecond' END,
  last_error = CASE WHEN o.attempts >= $4
    THEN 'lease expired after attempt ' || o.attempts || ' of ' || $4 || ' without a result (the relay crashed or the handler hung)'
      || COALESCE('; previous error: ' || o.last_error, '')
    ELSE o.last_error END
WHERE o.id = ANY(ARRAY(
  SELECT ${ordered ? 'c.' : ''}id FROM ${t}${ordered ? ' AS c' : ''}
  WHERE ${live} AND available_at <= now() AND topic = ANY($1::text[])${
    ordered
      ? `
    AND (c.seq IS NULL OR NOT EXISTS (
      SELECT 1 FROM ${t} AS p
      WHERE p.key = c.key AND p.seq < c.seq AND p.seq IS NOT NULL AND p.state <> 'delivered'
        AND (p.state <> 'dead' OR p.topic <> ALL($5::text[]))
    ))`
      : ''
  }
  ORDER BY available_at, id
  LIMIT $2
  FOR UPDATE${ordered ? ' OF c' : ''} SKIP LOCKED
))
RETURNING o.id::text AS id, o.topic, o.key, o.payload::text AS payload, o.headers::text AS headers, o.attempts,
  o.state, (extract(epoch FROM o.created_at) * 1000)::float8 AS created_ms, o.last_error${ordered ? ', o.seq IS NOT NULL AS ordered' : ''}`
  const claim = claimSql(false)
  const claimOrdered = claimSql(true)
  // Settles and lease extensions find their rows by primary key (`o.id = ANY($1)`) and test the
  // fence (`state = 'processing' AND attempts = $claimed`) in a clause that also names the
  // settlement, never as a filter of the table alone. A filter on `state` alone is estimated from
  // the table's statistics, and statistics taken while every row was pending say "no row is
  // processing": the planner then expected one row, scanned the whole table and compared every
  // row with every settlement (23 s for a settle of 1 000 rows on a 100 000-row table; 4-6 ms
  // now, whatever the statistics; docs/performance.md#claim-plans-statistics-and-autovacuum).
  const fenced = (s: string) => `o.attempts = CASE WHEN o.state = 'processing' THEN ${s}.attempts END`
  const settle = `WITH s AS (
  SELECT * FROM unnest($1::uuid[], $2::int4[], $3::text[], $4::float8[], $5::text[]) AS s(id, attempts, outcome, delay_ms, error)
), del AS (
  DELETE FROM ${t} AS o USING s
  WHERE NOT $6::bool AND s.outcome = 'delivered' AND o.id = ANY($1::uuid[]) AND o.id = s.id AND ${fenced('s')}
  RETURNING o.id
), upd AS (
  UPDATE ${t} AS o SET
    state = CASE s.outcome WHEN 'retry' THEN 'pending' WHEN 'dead' THEN 'dead' ELSE 'delivered' END,
    available_at = CASE s.outcome WHEN 'retry' THEN now() + s.delay_ms * interval '1 millisecond' ELSE now() END,
    last_error = CASE s.outcome WHEN 'delivered' THEN o.last_error ELSE s.error END
  FROM s
  WHERE ($6::bool OR s.outcome <> 'delivered') AND o.id = ANY($1::uuid[]) AND o.id = s.id AND ${fenced('s')}
  RETURNING o.id
)
SELECT s.id::text AS id FROM s WHERE s.id NOT IN (SELECT id FROM del UNION ALL SELECT id FROM upd)`
  // Returning the few ids that did not apply, not the many that did, spares the client a row per
  // message. The (id, attempts) pairs are tested with a hashed subplan (`IS TRUE` keeps the
  // planner from turning it into a join it would plan from the same statistics).
  const settleDelivered = `WITH del AS (
  DELETE FROM ${t} AS o
  WHERE o.id = ANY($1::uuid[]) AND o.state = 'processing'
    AND ((o.id, o.attempts) IN (SELECT * FROM unnest($1::uuid[], $2::int4[]))) IS TRUE
  RETURNING o.id
)
SELECT s.id::text AS id FROM unnest($1::uuid[]) AS s(id) WHERE s.id NOT IN (SELECT id FROM del)`
  const extendLease = `UPDATE ${t} AS o SET available_at = now() + $3::float8 * interval '1 millisecond'
FROM unnest($1::uuid[], $2::int4[]) AS s(id, attempts)
WHERE o.id = ANY($1::uuid[]) AND o.id = s.id AND ${fenced('s')}
RETURNING o.id::text AS id`
  const purge = `DELETE FROM ${t} WHERE state = ANY($1::text[]) AND available_at <= now() - $2::float8 * interval '1 millisecond'`
  const redrive = `UPDATE ${t} SET state = 'pending', attempts = 0, available_at = now()
WHERE state = 'dead' AND ($1::uuid[] IS NULL OR id = ANY($1::uuid[])) AND ($2::text[] IS NULL OR topic = ANY($2::text[]))`
  const stats = `SELECT topic, state, count(*)::int AS n,
  (extract(epoch FROM now() - min(created_at)) * 1000)::float8 AS oldest_age_ms,
  (extract(epoch FROM now() - min(available_at) FILTER (WHERE ${live} AND available_at <= now())) * 1000)::float8 AS oldest_due_lag_ms
FROM ${t} WHERE state = ANY($1::text[]) GROUP BY topic, state`
  // Paged by (death time truncated to the millisecond, id), newest first: the cursor is the
  // last row's (dead_ms, id) exactly as returned, so no row is skipped or repeated between pages.
  const deadMs = 'floor(extract(epoch FROM available_at) * 1000)'
  const listDead = `SELECT id::text AS id, topic, key, payload::text AS payload, headers::text AS headers, attempts, last_error,
  (extract(epoch FROM created_at) * 1000)::float8 AS created_ms, ${deadMs}::float8 AS dead_ms
FROM ${t} WHERE state = 'dead' AND ($1::text[] IS NULL OR topic = ANY($1::text[]))
  AND ($3::float8 IS NULL OR (${deadMs}, id) < ($3::float8::numeric, $4::uuid))
ORDER BY ${deadMs} DESC, id DESC LIMIT $2`
  const discard = `DELETE FROM ${t}
WHERE state = 'dead' AND ($1::uuid[] IS NULL OR id = ANY($1::uuid[])) AND ($2::text[] IS NULL OR topic = ANY($2::text[]))`
  const blockedKeys = `WITH heads AS (
  SELECT DISTINCT ON (key) key, id, topic, state, attempts, last_error, seq,
    (extract(epoch FROM available_at) * 1000)::float8 AS since_ms, (extract(epoch FROM created_at) * 1000)::float8 AS created_ms
  FROM ${t}
  WHERE seq IS NOT NULL AND state <> 'delivered' AND (state <> 'dead' OR topic <> ALL($1::text[]))
    AND ($3::text IS NULL OR key > $3::text)
  ORDER BY key, seq
)
SELECT h.key, h.id::text AS id, h.topic, h.state, h.attempts, h.last_error, h.since_ms, h.created_ms,
  (SELECT count(*) FROM ${t} AS w
   WHERE w.key = h.key AND w.seq > h.seq AND w.seq IS NOT NULL AND w.state IN ('pending', 'processing'))::int AS waiting
FROM heads AS h
WHERE (h.state = 'dead' OR ($5::bool AND h.state = 'pending' AND h.attempts > 0))
  AND ($2::text[] IS NULL OR h.topic = ANY($2::text[]))
ORDER BY h.key LIMIT $4`
  const statements = {
    ddl,
    migrate,
    publishOne,
    publishMany,
    publishOnePlain,
    publishManyPlain,
    publishOneGuardedPlain,
    publishManyGuardedPlain,
    publishOneGuarded,
    publishManyGuarded,
    claim,
    settle,
    settleDelivered,
    extendLease,
    purge,
    redrive,
    stats,
    listDead,
    discard,
    publishOneOrdered,
    publishManyOrdered,
    publishOneOrderedGuarded,
    publishManyOrderedGuarded,
    claimOrdered,
    blockedKeys,
  }
  cache.set(cacheKey, statements)
  return statements
}

function literal(value: string): string {
  return `'${value.replace(/'/g, "''")}'`
}
