import type { SqliteStatements } from '../statements.js'
import { LIVE, SQLITE_NOW_MS, type SqliteTable } from './table.js'

/** The outbox table and its indexes (see {@link SqliteStatements.ddl}). */
export function sqliteDdlStatements(table: SqliteTable): Pick<SqliteStatements, 'ddl' | 'migrate'> {
  const { t, bare, indexes: names, index } = table
  const now = SQLITE_NOW_MS
  const live = LIVE
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
    // Dead letters (listDead, countDead, stats): read without touching the delivered rows.
    `CREATE INDEX IF NOT EXISTS ${index(names.dead)} ON ${bare} (available_at, topic) WHERE state = 'dead'`,
  ].join(';\n')
  return { ddl, migrate: ddl }
}
