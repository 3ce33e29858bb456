import { defineOutbox, migrate, type Outbox } from '@outboxkit/core'
import { quoteIdent } from '@outboxkit/core/adapter'
import { pgBackend } from '@outboxkit/pg'
import type pg from 'pg'

/**
 * The tables of one reliability run, all on the database under test:
 * - `outbox`: the outbox itself;
 * - `ledger`: one row per handler side effect (message id, attempt, relay pid), written by the
 *   handler in autocommit before it returns, so a crash after it leaves the proof behind;
 * - `produced`: the ids of committed messages, written by the producer in the same business
 *   transaction as the message (so it commits or rolls back with it: the source of truth);
 * - `rolledBack`: the ids of messages whose transaction rolled back (written after the rollback);
 * - `explained`: ledger rows that may legitimately be repeated, with why (`killed`: the relay died
 *   while the message was in flight; `lease-expired`/`aborted`: the engine abandoned the handler;
 *   `fenced`: a late settle was refused).
 */
export interface LedgerTables {
  readonly outbox: string
  readonly ledger: string
  readonly produced: string
  readonly rolledBack: string
  readonly explained: string
}

/** The table names of a run whose tables start with `prefix` (a plain SQL identifier). */
export function ledgerTables(prefix: string): LedgerTables {
  if (!/^[a-z_][a-z0-9_]{0,40}$/.test(prefix)) throw new Error(`bad table prefix ${prefix}`)
  return {
    outbox: `${prefix}_outbox`,
    ledger: `${prefix}_ledger`,
    produced: `${prefix}_produced`,
    rolledBack: `${prefix}_rolled_back`,
    explained: `${prefix}_explained`,
  }
}

/** The outbox definition of a run (no schemas, no NOTIFY unless asked). */
export function runOutbox(tables: LedgerTables, notify = true): Outbox {
  return defineOutbox({ table: tables.outbox, notify })
}

/** Creates (or recreates, empty) every table of a run, and migrates its outbox. */
export async function createLedger(pool: pg.Pool, tables: LedgerTables): Promise<Outbox> {
  await dropLedger(pool, tables)
  const q = (name: string) => quoteIdent(name)
  await pool.query(`
    CREATE TABLE ${q(tables.ledger)} (
      seq bigserial PRIMARY KEY, id uuid NOT NULL, attempt int NOT NULL, pid int NOT NULL,
      topic text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
    CREATE INDEX ON ${q(tables.ledger)} (id);
    CREATE INDEX ON ${q(tables.ledger)} (pid);
    CREATE TABLE ${q(tables.produced)} (id uuid PRIMARY KEY, topic text NOT NULL);
    CREATE TABLE ${q(tables.rolledBack)} (id uuid PRIMARY KEY);
    CREATE TABLE ${q(tables.explained)} (
      id uuid NOT NULL, attempt int NOT NULL, why text NOT NULL, pid int NOT NULL,
      PRIMARY KEY (id, attempt));`)
  const outbox = runOutbox(tables)
  await migrate(outbox, pgBackend({ pool }))
  return outbox
}

/** Drops every table of a run. */
export async function dropLedger(pool: pg.Pool, tables: LedgerTables): Promise<void> {
  const names = [tables.outbox, tables.ledger, tables.produced, tables.rolledBack, tables.explained]
  await pool.query(`DROP TABLE IF EXISTS ${names.map(quoteIdent).join(', ')}`)
}

/** The statement a handler runs to record its side effect: $1 id, $2 attempt, $3 pid, $4 topic. */
export function ledgerInsertSql(tables: LedgerTables): string {
  return `INSERT INTO ${quoteIdent(tables.ledger)} (id, attempt, pid, topic) VALUES ($1, $2, $3, $4)`
}

/** Records that the ledger row of (`$1` id, `$2` attempt) may be repeated: $3 why, $4 pid. */
export function explainSql(tables: LedgerTables): string {
  return `INSERT INTO ${quoteIdent(tables.explained)} (id, attempt, why, pid) VALUES ($1, $2, $3, $4)
    ON CONFLICT DO NOTHING`
}

/**
 * After relay process `pid` died (SIGKILL), marks every side effect it performed whose message
 * was not settled as `killed`, and returns how many: the handlers that were in flight (past
 * their ledger write) when it died. With `keepDelivered: false` a settled delivery deletes the
 * row, so "the message still exists" means "this delivery was not settled". Call it only once the
 * process's connections are gone, so no statement of it is still running on the server.
 */
export async function captureInFlight(pool: pg.Pool, tables: LedgerTables, pid: number): Promise<number> {
  const { rowCount } = await pool.query(
    `INSERT INTO ${quoteIdent(tables.explained)} (id, attempt, why, pid)
     SELECT l.id, l.attempt, 'killed', l.pid FROM ${quoteIdent(tables.ledger)} l
     WHERE l.pid = $1 AND EXISTS (SELECT 1 FROM ${quoteIdent(tables.outbox)} o WHERE o.id = l.id)
     ON CONFLICT DO NOTHING`,
    [pid],
  )
  return rowCount ?? 0
}
