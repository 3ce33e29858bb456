import type { Outbox, TableRef } from '../define-outbox.js'

/** Quotes a validated identifier for PostgreSQL. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

/** The quoted, schema-qualified table name. */
export function qualifiedTable(table: TableRef): string {
  return table.schema ? `${quoteIdent(table.schema)}.${quoteIdent(table.name)}` : quoteIdent(table.name)
}

/** The names of the outbox table's indexes, as `migrate` and {@link outboxDdl} create them. */
export interface OutboxIndexNames {
  /** Partial index on `(available_at, id)` for pending and processing rows: serves the claim. */
  readonly due: string
  /** Partial unique index on `dedup_key`: backs producer-side deduplication. */
  readonly dedupKey: string
}

/**
 * The index names of an outbox table (unquoted), for ORM schema definitions that must match
 * core's DDL. Derived names stay under PostgreSQL's 63-byte limit, so the two never truncate to
 * one name.
 */
export function outboxIndexNames(table: TableRef): OutboxIndexNames {
  const derive = (suffix: string) => `${table.name.slice(0, 63 - suffix.length - 1)}_${suffix}`
  return { due: derive('due_idx'), dedupKey: derive('dedup_key_idx') }
}

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
  /** $1 topics[], $2 limit, $3 lease ms, $4 max attempts. */
  readonly claim: string
  /** $1 ids[], $2 attempts[], $3 outcomes[], $4 delay ms[], $5 errors[], $6 keep delivered. */
  readonly settle: string
  /** $1 ids[], $2 attempts[], $3 lease ms. */
  readonly extendLease: string
  /** $1 states[], $2 older than ms. */
  readonly purge: string
  /** $1 ids[] or null, $2 topics[] or null. */
  readonly redrive: string
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

const cache = new Map<string, PostgresStatements>()

/** Builds (and caches) the PostgreSQL statements for a table. */
export function postgresStatements(table: TableRef): PostgresStatements {
  const cacheKey = `${table.schema ?? ''}.${table.name}`
  const hit = cache.get(cacheKey)
  if (hit) return hit
  const t = qualifiedTable(table)
  const live = `state IN ('pending', 'processing')`
  const indexes = outboxIndexNames(table)
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
)`,
    `CREATE INDEX IF NOT EXISTS ${quoteIdent(indexes.due)} ON ${t} (available_at, id) WHERE ${live}`,
    `CREATE UNIQUE INDEX IF NOT EXISTS ${quoteIdent(indexes.dedupKey)} ON ${t} (dedup_key) WHERE dedup_key IS NOT NULL`,
  ].join(';\n')
  const migrate = `SELECT pg_advisory_xact_lock(hashtext(${literal(`outboxkit:migrate:${cacheKey}`)}));\n${ddl}`
  const publish = (many: boolean, guarded: boolean) => {
    // Guarded: write only when the transaction marker (POSTGRES_TRANSACTION_MARKER, sent just
    // before on the same connection) is still set, i.e. the marker's transaction still runs.
    const ok = guarded ? 'guard.ok' : 'true'
    const from = guarded ? ' FROM guard' : ''
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
      `ins AS (
  INSERT INTO ${t} (id, topic, key, payload, headers, available_at, dedup_key)
  ${
    many
      ? `SELECT id, topic, key, payload::jsonb, headers::jsonb, now() + delay_ms * interval '1 millisecond', dedup_key FROM m${guarded ? ', guard WHERE guard.ok' : ''} ORDER BY ord`
      : `SELECT $1::uuid, $2::text, $3::text, $4::text::jsonb, $5::text::jsonb, now() + $6::float8 * interval '1 millisecond', $7::text${from}${guarded ? ' WHERE guard.ok' : ''}`
  }
  ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL DO NOTHING
  RETURNING id
)`,
    ].filter(Boolean)
    const existing = many ? 'dedup_key = ANY($7::text[])' : '$7::text IS NOT NULL AND dedup_key = $7::text'
    return `WITH ${ctes.join(', ')}
SELECT id::text AS id, NULL::text AS dedup_key, true AS inserted FROM ins
UNION ALL SELECT o.id::text, o.dedup_key, false FROM ${t} AS o${guarded ? ', guard' : ''} WHERE ${ok} AND ${existing.replaceAll('dedup_key =', 'o.dedup_key =')}
UNION ALL SELECT NULL, NULL, NULL${from} WHERE CASE WHEN ${ok} AND $8::text <> '' THEN (SELECT true FROM (SELECT pg_notify($8::text, '')) AS wake) ELSE false END${
      guarded
        ? `
UNION ALL SELECT NULL, '${POSTGRES_NOT_IN_TRANSACTION}', false FROM guard WHERE NOT guard.ok`
        : ''
    }`
  }
  const publishOne = publish(false, false)
  const publishMany = publish(true, false)
  const publishOneGuarded = publish(false, true)
  const publishManyGuarded = publish(true, true)
  const claim = `WITH due AS (
  SELECT id FROM ${t}
  WHERE ${live} AND available_at <= now() AND topic = ANY($1::text[])
  ORDER BY available_at, id
  LIMIT $2
  FOR UPDATE SKIP LOCKED
)
UPDATE ${t} AS o SET
  state = CASE WHEN o.attempts >= $4 THEN 'dead' ELSE 'processing' END,
  attempts = CASE WHEN o.attempts >= $4 THEN o.attempts ELSE o.attempts + 1 END,
  available_at = CASE WHEN o.attempts >= $4 THEN now() ELSE now() + $3::float8 * interval '1 millisecond' END,
  last_error = CASE WHEN o.attempts >= $4
    THEN 'lease expired after attempt ' || o.attempts || ' of ' || $4 || ' without a result (the relay crashed or the handler hung)'
      || COALESCE('; previous error: ' || o.last_error, '')
    ELSE o.last_error END
FROM due WHERE o.id = due.id
RETURNING o.id::text AS id, o.topic, o.key, o.payload::text AS payload, o.headers::text AS headers, o.attempts,
  o.state, (extract(epoch FROM o.created_at) * 1000)::float8 AS created_ms, o.last_error`
  const settle = `WITH s AS (
  SELECT * FROM unnest($1::uuid[], $2::int4[], $3::text[], $4::float8[], $5::text[]) AS s(id, attempts, outcome, delay_ms, error)
), del AS (
  DELETE FROM ${t} AS o USING s
  WHERE NOT $6::bool AND s.outcome = 'delivered' AND o.id = s.id AND o.attempts = s.attempts AND o.state = 'processing'
  RETURNING o.id
), upd AS (
  UPDATE ${t} AS o SET
    state = CASE s.outcome WHEN 'retry' THEN 'pending' WHEN 'dead' THEN 'dead' ELSE 'delivered' END,
    available_at = CASE s.outcome WHEN 'retry' THEN now() + s.delay_ms * interval '1 millisecond' ELSE now() END,
    last_error = CASE s.outcome WHEN 'delivered' THEN o.last_error ELSE s.error END
  FROM s
  WHERE ($6::bool OR s.outcome <> 'delivered') AND o.id = s.id AND o.attempts = s.attempts AND o.state = 'processing'
  RETURNING o.id
)
SELECT id::text AS id FROM del UNION ALL SELECT id::text FROM upd`
  const extendLease = `UPDATE ${t} AS o SET available_at = now() + $3::float8 * interval '1 millisecond'
FROM unnest($1::uuid[], $2::int4[]) AS s(id, attempts)
WHERE o.id = s.id AND o.attempts = s.attempts AND o.state = 'processing'
RETURNING o.id::text AS id`
  const purge = `DELETE FROM ${t} WHERE state = ANY($1::text[]) AND available_at <= now() - $2::float8 * interval '1 millisecond'`
  const redrive = `UPDATE ${t} SET state = 'pending', attempts = 0, available_at = now()
WHERE state = 'dead' AND ($1::uuid[] IS NULL OR id = ANY($1::uuid[])) AND ($2::text[] IS NULL OR topic = ANY($2::text[]))`
  const statements = {
    ddl,
    migrate,
    publishOne,
    publishMany,
    publishOneGuarded,
    publishManyGuarded,
    claim,
    settle,
    extendLease,
    purge,
    redrive,
  }
  cache.set(cacheKey, statements)
  return statements
}

function literal(value: string): string {
  return `'${value.replace(/'/g, "''")}'`
}

/**
 * The DDL that creates an outbox table and its indexes on PostgreSQL, for your own migration tool
 * (Prisma Migrate, drizzle-kit custom migrations, TypeORM migrations, Flyway, ...). Idempotent.
 *
 * @example
 * ```ts
 * import { outboxDdl } from '@outboxkit/core'
 * fs.writeFileSync('migrations/001_outbox.sql', outboxDdl(outbox))
 * ```
 */
export function outboxDdl(outbox: Pick<Outbox, 'table'>, dialect: 'postgres' = 'postgres'): string {
  if (dialect !== 'postgres') throw new Error(`[outboxkit] [core] unknown dialect ${String(dialect)}`)
  return `${postgresStatements(outbox.table).ddl};\n`
}
