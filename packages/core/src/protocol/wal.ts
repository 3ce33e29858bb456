import type { Outbox, TableRef } from '../outbox/define-outbox.js'
import type { ClaimedRow } from './backend.js'

// The WAL transport's slice of the backend protocol (docs/wal.md): a reader of the outbox's
// logical replication slot, the move of a message into the table, and the slot's health.

/** One committed transaction's messages of this outbox, as the slot decodes it, in commit order. */
export interface WalTransaction {
  /** The end of the transaction's commit record: confirming it lets the slot forget the transaction. */
  readonly endLsn: bigint
  /** Its messages, in the order they were published (attempts 1, state `processing`). */
  readonly rows: readonly ClaimedRow[]
}

/** What {@link OutboxWal.read} reports. Called in the order of the stream. */
export interface WalReadHandlers {
  /** A committed transaction with messages of this outbox. */
  onTransaction(transaction: WalTransaction): void
  /**
   * The stream reached `lsn` with no message of this outbox outstanding in between (a keepalive,
   * or a transaction without any of its messages): once every earlier transaction is settled,
   * the slot may be confirmed up to here.
   */
  onProgress(lsn: bigint): void
  /** A message of this outbox's prefix whose content could not be read: it is skipped. */
  onInvalid(reason: string): void
  /** The stream ended: `error` when the connection failed or the server ended it. */
  onEnd(error?: unknown): void
}

/** A running read of the slot, from {@link OutboxWal.read}. */
export interface WalReader {
  /** Tells the server everything up to `lsn` is handled: the slot's `confirmed_flush_lsn` moves there. */
  confirm(lsn: bigint): void
  /** Stops reading the socket (back pressure); {@link WalReader.resume} reads again. */
  pause(): void
  resume(): void
  /** Sends the last confirmation and ends the replication connection. */
  close(): Promise<void>
}

/** A WAL message that leaves the stream for the table (its handler did not deliver it, or no handler here). */
export interface WalMove {
  readonly row: ClaimedRow
  readonly state: 'pending' | 'dead' | 'delivered'
  /** The attempts already made (0 for a message this relay has no handler for). */
  readonly attempts: number
  readonly delayMs: number
  readonly error: string | null
}

/** The health of the outbox's slot, from {@link OutboxWal.slotStats}. */
export interface SlotStats {
  readonly slot: string
  /** A relay reads it now. */
  readonly active: boolean
  /** WAL the server keeps for this slot (`pg_current_wal_lsn() - restart_lsn`), in bytes. */
  readonly retainedBytes: number
  /** WAL written since the relay's last confirmation (`pg_current_wal_lsn() - confirmed_flush_lsn`), in bytes. */
  readonly lagBytes: number
  /** `pg_replication_slots.wal_status` (`reserved`, `extended`, `unreserved`, `lost`). */
  readonly walStatus: string | null
  readonly confirmedFlushLsn: string | null
}

/**
 * The WAL transport of a PostgreSQL backend (`OutboxBackend.wal`). A backend without it (PGlite,
 * MySQL, SQLite, a driver without a replication client) cannot serve `transport: 'wal'`.
 */
export interface OutboxWal {
  /**
   * Checks the server can serve the WAL transport (PostgreSQL 14+, `wal_level = logical`).
   * Throws `OutboxError('WAL_UNAVAILABLE')` naming what to change.
   */
  check(): Promise<void>
  /**
   * Starts reading the outbox's slot from its confirmed position. Resolves `'busy'` when another
   * relay reads it (one reader per slot: call again later to stand by).
   */
  read(outbox: Outbox, handlers: WalReadHandlers): Promise<WalReader | 'busy'>
  /** Writes WAL messages into the outbox table, in one statement (a row already there stays). */
  moveToTable(table: TableRef, moves: readonly WalMove[]): Promise<void>
  /**
   * The slot's dispatch mark (docs/wal.md, "Replays and attempts"): the end LSN of the last
   * transaction whose messages a reader of the slot may have handed to handlers, `0n` when none.
   * A transaction the slot streams again at or below it was (possibly) attempted once already.
   * Read by a reader once it holds the slot. Throws `WAL_UNAVAILABLE` when `migrate` has not
   * created the mark's table.
   */
  readDispatchMark(outbox: Outbox): Promise<bigint>
  /**
   * Moves the dispatch mark to `lsn` before messages up to there are handed to handlers. It never
   * moves back, unless `exact` (a reader that stops with every handed-over message settled sets
   * it to its last confirmation, so a restart counts no attempt it did not make).
   */
  writeDispatchMark(outbox: Outbox, lsn: bigint, exact: boolean): Promise<void>
  /** The slot's health, or `null` when it does not exist. */
  slotStats(outbox: Outbox): Promise<SlotStats | null>
  /**
   * Drops the slot, its publication and its dispatch mark's table; `false` when there was no
   * slot. Fails while a relay reads it.
   */
  dropSlot(outbox: Outbox): Promise<boolean>
}
