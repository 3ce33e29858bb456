import { defineOutbox, migrate, type Outbox } from '@outboxkit/core'
import type { LedgerDb } from './ledger-db.js'
import { ledgerSql } from './ledger-sql.js'

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
 *   `fenced`: a late settle was refused);
 * - `connections` (MySQL only): the server connection ids of each relay process, so a dead
 *   relay's connections can be waited out (PostgreSQL has `application_name`, SQLite has none);
 * - `keyOrder` and `keyCounter` (PostgreSQL only): the commit order of the keyed messages, per key
 *   (see `ledger-key-order-sql.ts`), written by the producer in the business transaction.
 */
export interface LedgerTables {
  readonly outbox: string
  readonly ledger: string
  readonly produced: string
  readonly rolledBack: string
  readonly explained: string
  readonly connections: string
  readonly keyOrder: string
  readonly keyCounter: string
}

/** The table names of a run whose tables start with `prefix` (a plain SQL identifier). */
export function ledgerTables(prefix: string): LedgerTables {
  if (!/^[a-z_][a-z0-9_]{0,40}$/.test(prefix))
    throw new Error(`[outboxkit] [reliability] bad table prefix ${prefix}`)
  return {
    outbox: `${prefix}_outbox`,
    ledger: `${prefix}_ledger`,
    produced: `${prefix}_produced`,
    rolledBack: `${prefix}_rolled_back`,
    explained: `${prefix}_explained`,
    connections: `${prefix}_conns`,
    keyOrder: `${prefix}_key_order`,
    keyCounter: `${prefix}_key_counter`,
  }
}

/** How a run's outbox is defined (see {@link runOutbox}). */
export interface RunOutboxOptions {
  /**
   * Whether publishes NOTIFY the relays.
   *
   * @defaultValue `true`
   */
  notify?: boolean
  /**
   * The outbox's transport (docs/wal.md).
   *
   * @defaultValue `'table'`
   */
  transport?: 'table' | 'wal'
  /**
   * Topics declared ordered (docs/ordering.md); the relay workers handle each like `work`.
   *
   * @defaultValue `[]`
   */
  orderedTopics?: readonly string[]
}

/** The outbox definition of a run (no schemas). */
export function runOutbox(tables: LedgerTables, options: RunOutboxOptions = {}): Outbox {
  return defineOutbox({
    table: tables.outbox,
    notify: options.notify ?? true,
    transport: options.transport ?? 'table',
    orderedTopics: options.orderedTopics ?? [],
  })
}

/** Creates (or recreates, empty) every table of a run on `db`, and migrates its outbox. */
export async function createLedger(
  db: LedgerDb,
  tables: LedgerTables,
  options: RunOutboxOptions = {},
): Promise<Outbox> {
  await dropLedger(db, tables)
  for (const statement of ledgerSql(db.dialect, tables).create) await db.execute(statement)
  const outbox = runOutbox(tables, options)
  await migrate(outbox, db.backend())
  return outbox
}

/** Drops every table of a run. */
export async function dropLedger(db: LedgerDb, tables: LedgerTables): Promise<void> {
  for (const statement of ledgerSql(db.dialect, tables).drop) await db.execute(statement)
}

/**
 * After relay process `pid` died (SIGKILL), marks every side effect it performed whose message
 * was not settled as `killed`, and returns how many: the handlers that were in flight (past
 * their ledger write) when it died. With `keepDelivered: false` a settled delivery deletes the
 * row, so "the message still exists" means "this delivery was not settled". Call it only once the
 * process's connections are gone (see {@link openConnections}), so no statement of it is still
 * running on the server.
 */
export async function captureInFlight(db: LedgerDb, tables: LedgerTables, pid: number): Promise<number> {
  return db.execute(ledgerSql(db.dialect, tables).captureInFlight, [pid])
}

/**
 * How many server connections of a relay process are still open (0 for SQLite, whose statements
 * end with their process).
 */
export async function openConnections(
  db: LedgerDb,
  tables: LedgerTables,
  relay: { applicationName: string; pid: number },
): Promise<number> {
  const query = ledgerSql(db.dialect, tables).openConnections(relay)
  if (!query) return 0
  const [row] = await db.query<{ n: number }>(...query)
  return Number(row?.n ?? 0)
}

/** Rows of the run's outbox still `pending` or `processing`. */
export async function liveRows(db: LedgerDb, tables: LedgerTables): Promise<number> {
  const [row] = await db.query<{ n: number }>(ledgerSql(db.dialect, tables).live)
  return Number(row?.n ?? 0)
}
