import type { Outbox, TableRef } from '../../../outbox/define-outbox.js'
import { OutboxError } from '../../../outbox/errors.js'
import type { OutboxWal, SlotStats, WalMove, WalReader, WalReadHandlers } from '../../../protocol/wal.js'
import { startReplicationCommand } from '../statements/wal.js'
import { formatLsn, parseLsn } from './pgoutput.js'
import { PgoutputReader, type ReplicationConnection, type ReplicationHandlers } from './reader.js'
import { walStatementsOf } from './statements-of.js'

/** Runs one statement, mapping errors (the backend's `run`). */
type Run = (what: string, text: string, params: readonly unknown[]) => Promise<Record<string, unknown>[]>

/** The driver's replication client (see `PostgresExecutor.replicate`). */
export type Replicate = (command: string, handlers: ReplicationHandlers) => Promise<ReplicationConnection>

/** `OutboxError('WAL_UNAVAILABLE')` of `source`. */
export function walUnavailable(source: string, what: string): OutboxError {
  return new OutboxError('WAL_UNAVAILABLE', `${what} See docs/wal.md, "The server".`, { source })
}

/** Checks `wal_level` and the version; throws `WAL_UNAVAILABLE` naming what to change. */
export async function checkWalServer(run: Run, source: string): Promise<void> {
  const { sql } = walStatementsOf({ schema: null, name: 'outbox', display: 'outbox' })
  const [row] = await run('the WAL transport check', sql.serverCheck, [])
  const version = Number(row?.version ?? 0)
  if (version < 140000) {
    throw walUnavailable(
      source,
      `transport 'wal' needs PostgreSQL 14 or later (pgoutput's messages option); this server is ${version}. Use transport 'table'.`,
    )
  }
  if (row?.wal_level !== 'logical') {
    throw walUnavailable(
      source,
      `transport 'wal' needs wal_level = logical; this server has wal_level = ${String(row?.wal_level)}. Run ALTER SYSTEM SET wal_level = logical and restart PostgreSQL (scripts/ensure-wal.sh does it for a local server), or use transport 'table'.`,
    )
  }
}

/**
 * Creates the dispatch mark's table, the outbox's publication and slot when missing (after
 * {@link checkWalServer} and the table's DDL, outside its transaction).
 */
export async function migrateWal(run: Run, outbox: Outbox): Promise<void> {
  const { names, sql } = walStatementsOf(outbox.table)
  await run('creating the table of the dispatch mark', sql.createMarkTable, [])
  await run('creating the WAL publication', sql.createPublication, [])
  try {
    await run('creating the replication slot', sql.createSlot, [names.slot])
  } catch (err) {
    // A concurrent migrate created it between the check and the create.
    const code = (err as { cause?: { code?: string } }).cause?.code
    if (code !== '42710') throw err
  }
}

function slotStatsFrom(slot: string, row: Record<string, unknown> | undefined): SlotStats | null {
  if (!row) return null
  return {
    slot,
    active: row.active === true || row.active === 't',
    retainedBytes: Number(row.retained_bytes ?? 0),
    lagBytes: Number(row.lag_bytes ?? 0),
    walStatus: (row.wal_status as string | null) ?? null,
    confirmedFlushLsn: (row.confirmed_flush_lsn as string | null) ?? null,
  }
}

/** The {@link OutboxWal} of a PostgreSQL backend, from its statement runner and the driver's replication client. */
export function createPostgresWal(run: Run, replicate: Replicate, source: string): OutboxWal {
  return {
    check: () => checkWalServer(run, source),
    async read(outbox: Outbox, handlers: WalReadHandlers): Promise<WalReader | 'busy'> {
      const { names } = walStatementsOf(outbox.table)
      const reader = new PgoutputReader(names.prefix, handlers)
      try {
        reader.attach(
          await replicate(startReplicationCommand(names.slot, names.slot, '0/0'), reader.replicationHandlers),
        )
      } catch (err) {
        // 55006 object_in_use: another relay reads the slot.
        if ((err as { code?: string }).code === '55006') return 'busy'
        if ((err as { code?: string }).code === '42704') {
          throw walUnavailable(
            source,
            `the replication slot ${names.slot} of table ${outbox.table.display} does not exist: run migrate(outbox, backend) with transport 'wal' first.`,
          )
        }
        throw new OutboxError(
          'DATABASE',
          `reading the replication slot ${names.slot} failed: ${(err as Error).message ?? String(err)}`,
          { source, cause: err },
        )
      }
      return reader
    },
    async moveToTable(table: TableRef, moves: readonly WalMove[]): Promise<void> {
      if (moves.length === 0) return
      const { sql } = walStatementsOf(table)
      const col = <T>(f: (m: WalMove) => T) => moves.map(f)
      await run('moving WAL messages into the table', sql.moveToTable, [
        col((m) => m.row.id),
        col((m) => m.row.topic),
        col((m) => m.row.key),
        col((m) => m.row.payload),
        col((m) => m.row.headers),
        col((m) => m.row.createdAtMs),
        col((m) => m.state),
        col((m) => m.attempts),
        col((m) => m.delayMs),
        col((m) => m.error),
      ])
    },
    async readDispatchMark(outbox: Outbox): Promise<bigint> {
      const { names, sql } = walStatementsOf(outbox.table)
      try {
        const [row] = await run('reading the dispatch mark', sql.readMark, [names.slot])
        return row ? parseLsn(String(row.lsn)) : 0n
      } catch (err) {
        // 42P01 undefined_table: migrated before the mark existed.
        if ((err as { cause?: { code?: string } }).cause?.code !== '42P01') throw err
        throw walUnavailable(
          source,
          `the table ${names.markTable} of the replication slot's dispatch mark does not exist: run migrate(outbox, backend) again (it creates it).`,
        )
      }
    },
    async writeDispatchMark(outbox: Outbox, lsn: bigint, exact: boolean): Promise<void> {
      const { names, sql } = walStatementsOf(outbox.table)
      await run('writing the dispatch mark', exact ? sql.setMark : sql.advanceMark, [
        names.slot,
        formatLsn(lsn),
      ])
    },
    async slotStats(outbox: Outbox): Promise<SlotStats | null> {
      const { names, sql } = walStatementsOf(outbox.table)
      const rows = await run('reading the replication slot', sql.slotStats, [names.slot])
      return slotStatsFrom(names.slot, rows[0])
    },
    async dropSlot(outbox: Outbox): Promise<boolean> {
      const { names, sql } = walStatementsOf(outbox.table)
      const rows = await run('dropping the replication slot', sql.dropSlot, [names.slot])
      await run('dropping the WAL publication', sql.dropPublication, [])
      await run('dropping the table of the dispatch mark', sql.dropMarkTable, [])
      return rows.length > 0
    },
  }
}
