import type { TableRef } from '../../../outbox/define-outbox.js'
import { inboxIndexName, qualifiedTable, quoteIdent } from '../../sql-identifiers.js'
import { POSTGRES_NOT_IN_TRANSACTION } from './publish.js'
import { literal } from './table.js'

// The inbox statements of PostgreSQL: its table, processOnce's one INSERT, purge and stats.

/** Every SQL statement of an inbox table on PostgreSQL. Parameters are positional. */
export interface PostgresInboxStatements {
  /** Idempotent DDL (multi-statement), for users' migration tools. */
  readonly ddl: string
  /** `ddl` behind a transaction-scoped advisory lock, so concurrent `migrate` calls do not race. */
  readonly migrate: string
  /**
   * processOnce: $1 consumer, $2 message id. `ON CONFLICT DO NOTHING`: a row committed by another
   * transaction makes it write nothing; a row inserted by a transaction still open makes it wait
   * for that one to end (then nothing when it committed, the row when it rolled back). Rows:
   * one `(inserted: true)` when it wrote the row, none otherwise.
   */
  readonly claim: string
  /**
   * `claim` that writes only while `POSTGRES_TRANSACTION_MARKER`, sent just before on the same
   * connection, is in force; otherwise it writes nothing and returns one row whose `dedup_key` is
   * {@link POSTGRES_NOT_IN_TRANSACTION} (as a guarded publish does).
   */
  readonly claimGuarded: string
  /** Deletes at most $3 rows of consumer $1 processed more than $2 ms ago. Rows: (n). */
  readonly purgeBatch: string
  /** $1 consumer. Rows: (n, oldest_age_ms). */
  readonly stats: string
}

const cache = new Map<string, PostgresInboxStatements>()

/** Builds (and caches) the PostgreSQL statements of an inbox table. */
export function postgresInboxStatements(table: TableRef): PostgresInboxStatements {
  const key = `${table.schema ?? ''}.${table.name}`
  const hit = cache.get(key)
  if (hit) return hit
  const t = qualifiedTable(table)
  const ddl = [
    `CREATE TABLE IF NOT EXISTS ${t} (
  consumer text NOT NULL,
  message_id text NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, message_id)
)`,
    `CREATE INDEX IF NOT EXISTS ${quoteIdent(inboxIndexName(table))} ON ${t} (consumer, processed_at)`,
  ].join(';\n')
  const statements: PostgresInboxStatements = {
    ddl,
    migrate: `SELECT pg_advisory_xact_lock(hashtext(${literal(`outboxkit:migrate:inbox:${key}`)}));\n${ddl}`,
    claim: `INSERT INTO ${t} (consumer, message_id) VALUES ($1::text, $2::text)
ON CONFLICT (consumer, message_id) DO NOTHING
RETURNING true AS inserted`,
    claimGuarded: `WITH guard AS (SELECT current_setting('outboxkit.in_tx', true) IS NOT DISTINCT FROM 'on' AS ok),
ins AS (
  INSERT INTO ${t} (consumer, message_id) SELECT $1::text, $2::text FROM guard WHERE guard.ok
  ON CONFLICT (consumer, message_id) DO NOTHING
  RETURNING 1
)
SELECT NULL::text AS id, NULL::text AS dedup_key, true AS inserted FROM ins
UNION ALL SELECT NULL, '${POSTGRES_NOT_IN_TRANSACTION}', false FROM guard WHERE NOT guard.ok`,
    purgeBatch: `WITH d AS (
  DELETE FROM ${t} WHERE (consumer, message_id) IN (
    SELECT consumer, message_id FROM ${t}
    WHERE consumer = $1::text AND processed_at < now() - $2::float8 * interval '1 millisecond'
    LIMIT $3::int
  ) RETURNING 1
) SELECT count(*)::int AS n FROM d`,
    stats: `SELECT count(*)::int AS n,
  (extract(epoch FROM now() - min(processed_at)) * 1000)::float8 AS oldest_age_ms
FROM ${t} WHERE consumer = $1::text`,
  }
  cache.set(key, statements)
  return statements
}
