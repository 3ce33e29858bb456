import { quoteIdent } from '../../sql-identifiers.js'
import type { PostgresStatements } from '../statements.js'
import { literal, type PostgresTable } from './table.js'

/**
 * The storage parameters `migrate` gives the outbox table: autovacuum tuned for a queue table,
 * whose size swings from empty to a burst of a million rows and where every delivered message
 * leaves dead tuples. Vacuum and analyse after a fixed 10 000 changed rows instead of 20 % / 10 %
 * of a size that keeps changing, and let vacuum run unthrottled (a healthy outbox is small).
 * See docs/operations.md#autovacuum.
 */
export const OUTBOX_STORAGE_PARAMETERS =
  'autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000, autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 10000'

/** The DDL of the outbox table (`CREATE ... IF NOT EXISTS`, upgrades in place), and the script `migrate` runs. */
export function postgresDdlStatements(table: PostgresTable): Pick<PostgresStatements, 'ddl' | 'migrate'> {
  const { t, cacheKey, indexes, sequence, live } = table
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
    // Dead letters (listDead, countDead, stats): read without touching the delivered rows.
    `CREATE INDEX IF NOT EXISTS ${quoteIdent(indexes.dead)} ON ${t} (available_at, topic) WHERE state = 'dead'`,
  ].join(';\n')
  const migrate = `SELECT pg_advisory_xact_lock(hashtext(${literal(`outboxkit:migrate:${cacheKey}`)}));\n${ddl}`
  return {
    ddl,
    migrate,
  }
}
