// The statements of the WAL transport (docs/wal.md): the publish through
// pg_logical_emit_message, the slot and its publication, the slot's stats, and the move of a WAL
// message into the outbox table when its handler did not deliver it.
import { quoteIdent } from '../../sql-identifiers.js'
import { POSTGRES_NOT_IN_TRANSACTION } from './publish.js'
import type { PostgresTable } from './table.js'

/** Every SQL statement of the WAL transport for one table. */
export interface PostgresWalStatements {
  /**
   * $1 prefix, $2 content, $3 slot: one transactional logical decoding message, written only when
   * the outbox's slot exists (a message no slot reads would be lost). One row in the shape of the
   * table's publish rows: `id` the message's LSN, `inserted` whether the slot exists (false:
   * nothing was written), `dedup_key` null.
   */
  readonly publish: string
  /** `publish` without the slot lookup (`inserted` always true): while a recent publish saw the slot. */
  readonly publishUnchecked: string
  /** `publishGuarded` without the slot lookup. */
  readonly publishGuardedUnchecked: string
  /**
   * `publish` that writes only while `POSTGRES_TRANSACTION_MARKER` is in force, else returns one
   * row whose `dedup_key` is `POSTGRES_NOT_IN_TRANSACTION` (same rule as the table's guarded form).
   */
  readonly publishGuarded: string
  /** The server's `wal_level` and `server_version_num`. */
  readonly serverCheck: string
  /** Creates the (empty) publication pgoutput needs, when missing. Safe to run concurrently. */
  readonly createPublication: string
  /** $1 slot name: creates the pgoutput slot when missing. Must run outside a transaction that wrote. */
  readonly createSlot: string
  /** $1 slot name: (active, retained_bytes, lag_bytes, wal_status, confirmed_flush_lsn), no row when missing. */
  readonly slotStats: string
  /** $1 slot name: drops the slot (fails while a relay reads it). */
  readonly dropSlot: string
  /** Drops the publication, when present. */
  readonly dropPublication: string
  /** Creates the table of the slot's dispatch mark (`<table>_wal`), when missing. */
  readonly createMarkTable: string
  /** $1 slot: the dispatch mark (`lsn`, text), no row when none was written. */
  readonly readMark: string
  /**
   * $1 slot, $2 lsn (text): moves the mark forward (never back), committed without waiting for
   * the WAL flush (`synchronous_commit = off` for this statement only: a relay crash loses
   * nothing committed; only a server crash could lose the last mark, and with it one attempt's count).
   */
  readonly advanceMark: string
  /** $1 slot, $2 lsn (text): sets the mark exactly (a reader that stops with nothing unsettled). */
  readonly setMark: string
  /** Drops the table of the dispatch mark (the slot is decommissioned). */
  readonly dropMarkTable: string
  /**
   * Moves WAL messages into the table: $1 ids[], $2 topics[], $3 keys[], $4 payloads[] (json text),
   * $5 headers[] (json text), $6 created ms[], $7 states[], $8 attempts[], $9 delay ms[], $10 errors[].
   * A row already there (a replay after a crash) is left as it is.
   */
  readonly moveToTable: string
}

/** The START_REPLICATION command of `slot` for pgoutput with messages (replication protocol). */
export function startReplicationCommand(slot: string, publication: string, fromLsn: string): string {
  return `START_REPLICATION SLOT ${quoteIdent(slot)} LOGICAL ${fromLsn} (proto_version '1', publication_names '${publication.replace(/'/g, "''")}', messages 'true')`
}

/**
 * The WAL transport's statements for `table` whose slot and publication are `name`; `mark` is the
 * quoted, qualified table of the slot's dispatch mark.
 */
export function postgresWalStatements(
  table: PostgresTable,
  name: string,
  mark: string,
): PostgresWalStatements {
  const guard = `current_setting('outboxkit.in_tx', true) IS NOT DISTINCT FROM 'on'`
  const slotExists = 'EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $3::name)'
  return {
    publish: `SELECT CASE WHEN s.slot THEN pg_logical_emit_message(true, $1::text, $2::text)::text END AS id,
  NULL::text AS dedup_key, s.slot AS inserted
FROM (SELECT ${slotExists} AS slot) AS s`,
    publishGuarded: `SELECT CASE WHEN g.ok AND g.slot THEN pg_logical_emit_message(true, $1::text, $2::text)::text END AS id,
  CASE WHEN g.ok THEN NULL ELSE '${POSTGRES_NOT_IN_TRANSACTION}' END AS dedup_key, g.slot AS inserted
FROM (SELECT ${guard} AS ok, ${slotExists} AS slot) AS g`,
    publishUnchecked: `SELECT pg_logical_emit_message(true, $1::text, $2::text)::text AS id, NULL::text AS dedup_key, true AS inserted`,
    publishGuardedUnchecked: `SELECT CASE WHEN g.ok THEN pg_logical_emit_message(true, $1::text, $2::text)::text END AS id,
  CASE WHEN g.ok THEN NULL ELSE '${POSTGRES_NOT_IN_TRANSACTION}' END AS dedup_key, true AS inserted
FROM (SELECT ${guard} AS ok) AS g`,
    serverCheck: `SELECT current_setting('wal_level') AS wal_level, current_setting('server_version_num')::int AS version`,
    createPublication: `DO $outboxkit$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = '${name}') THEN CREATE PUBLICATION ${quoteIdent(name)}; END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $outboxkit$`,
    createSlot: `SELECT slot_name::text FROM pg_create_logical_replication_slot($1::name, 'pgoutput')
WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1::name)`,
    slotStats: `SELECT active, pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::float8 AS retained_bytes,
  pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::float8 AS lag_bytes,
  wal_status, confirmed_flush_lsn::text AS confirmed_flush_lsn
FROM pg_replication_slots WHERE slot_name = $1::name`,
    dropSlot: `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1::name`,
    dropPublication: `DROP PUBLICATION IF EXISTS ${quoteIdent(name)}`,
    createMarkTable: `CREATE TABLE IF NOT EXISTS ${mark} (slot name PRIMARY KEY, dispatched_lsn pg_lsn NOT NULL)`,
    readMark: `SELECT dispatched_lsn::text AS lsn FROM ${mark} WHERE slot = $1::name`,
    advanceMark: `WITH c AS (SELECT set_config('synchronous_commit', 'off', true))
INSERT INTO ${mark} AS m (slot, dispatched_lsn) SELECT $1::name, $2::pg_lsn FROM c
ON CONFLICT (slot) DO UPDATE SET dispatched_lsn = GREATEST(m.dispatched_lsn, EXCLUDED.dispatched_lsn)`,
    setMark: `INSERT INTO ${mark} (slot, dispatched_lsn) VALUES ($1::name, $2::pg_lsn)
ON CONFLICT (slot) DO UPDATE SET dispatched_lsn = EXCLUDED.dispatched_lsn`,
    dropMarkTable: `DROP TABLE IF EXISTS ${mark}`,
    moveToTable: `INSERT INTO ${table.t} (id, topic, key, payload, headers, created_at, state, attempts, available_at, last_error)
SELECT id, topic, key, payload::jsonb, headers::jsonb, to_timestamp(created_ms / 1000.0), state, attempts,
  now() + delay_ms * interval '1 millisecond', error
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[], $7::text[], $8::int[], $9::float8[], $10::text[])
  AS m(id, topic, key, payload, headers, created_ms, state, attempts, delay_ms, error)
ON CONFLICT (id) DO NOTHING`,
  }
}
