import type { Outbox } from '../outbox/define-outbox.js'
import type { ClaimedRow } from '../protocol/backend.js'
import type { OutboxWal, WalMove, WalReader, WalTransaction } from '../protocol/wal.js'
import type { SafeLogger } from '../telemetry/logger.js'
import { backoffDelay, SETTLE_BACKOFF } from './backoff.js'
import { type OpenTransaction, WalConfirmations } from './wal-confirmations.js'
import { WalConnector } from './wal-connector.js'
import { DispatchMark } from './wal-dispatch-mark.js'
import { SLOT_HEALTH_EVERY_MS, warnIfSlotRetains } from './wal-slot-health.js'

/** What the WAL source calls (see {@link WalSource}). */
export interface WalSourceDeps {
  readonly wal: OutboxWal
  readonly outbox: Outbox
  /** The topics this relay has handlers for: messages of other topics move into the table. */
  readonly topics: ReadonlySet<string>
  readonly log: SafeLogger
  /** How many more messages may be handed to delivery now. */
  freeSlots(): number
  /** Hands messages to delivery (the runner's onRows). */
  onRows(rows: readonly ClaimedRow[]): void
  reportError(error: unknown): void
  /** Warn when the slot retains more than this many bytes. */
  readonly slotWarnBytes: number
  /**
   * The move into the table of a message the slot streams again at or below the dispatch mark: a
   * relay may have handed it to a handler before it stopped without settling it.
   */
  replayMove(row: ClaimedRow): WalMove
}

/** A message of a topic this relay has no handler for: pending in the table, unattempted, for a relay that has one. */
function foreignMove(row: ClaimedRow): WalMove {
  return { row, state: 'pending', attempts: 0, delayMs: 0, error: null }
}

/**
 * How many messages past those handed over now the dispatch mark covers in one write: one
 * statement per this many messages in a drain; after a crash, at most about this many messages
 * that no handler saw are counted as attempted once.
 */
export const MARK_AHEAD = 256

/**
 * The second claim source (docs/wal.md): reads the outbox's replication slot and hands its
 * messages to delivery in commit order, as free slots allow (pausing the stream meanwhile). It
 * confirms the slot only up to the end of the last transaction whose every message is settled,
 * so a crash replays from the oldest unsettled one. Before handing a message over it makes the
 * slot's dispatch mark cover it; what the slot streams again at or below the mark moves into the
 * table with that attempt counted, where leases and `maxAttempts` bound it. One reader per slot:
 * while another relay reads it, this one stands by (see {@link WalConnector}).
 */
export class WalSource {
  #reader: WalReader | undefined
  #waiting: ClaimedRow[] = []
  #txOf = new WeakMap<ClaimedRow, OpenTransaction>()
  #rows = new Map<string, ClaimedRow>()
  #paused = false
  #running = false
  #health: ReturnType<typeof setInterval> | undefined
  readonly #confirmations = new WalConfirmations()
  readonly #mark: DispatchMark
  readonly #connector: WalConnector
  /** Transactions ending at or below it were possibly handed to handlers by an earlier reader. */
  #replayUpTo = 0n
  #replayLogged = false
  /** Moves into the table under way. */
  #moving = 0

  /** @param deps - the backend's WAL transport and the relay's reactions */
  constructor(private readonly deps: WalSourceDeps) {
    const table = deps.outbox.table.display
    this.#mark = new DispatchMark({
      write: (lsn) => deps.wal.writeDispatchMark(deps.outbox, lsn, false),
      onCovered: () => this.pump(),
      onFailed: (error, retryInMs) => {
        deps.reportError(error)
        deps.log.log(
          'warn',
          { table, err: error, retryInMs },
          `writing the replication slot's dispatch mark failed; retrying in ${retryInMs} ms (messages wait meanwhile)`,
        )
      },
    })
    this.#connector = new WalConnector({
      wal: deps.wal,
      outbox: deps.outbox,
      log: deps.log,
      reportError: deps.reportError,
      stream: {
        onTransaction: (tx) => this.#onTransaction(tx),
        onProgress: (lsn) => {
          this.#confirmations.progress(lsn)
          this.#advance()
        },
        onInvalid: (reason) =>
          deps.log.log('error', { table }, `skipped a WAL message that is not outboxkit's: ${reason}`),
      },
      onReady: (reader, mark) => this.#onReady(reader, mark),
      onEnd: () => this.#onEnd(),
    })
  }

  /** Starts reading (or standing by). */
  start(): void {
    this.#running = true
    this.#connector.start()
    this.#health = setInterval(() => void this.#checkHealth(), SLOT_HEALTH_EVERY_MS)
    this.#health.unref?.()
  }

  /** The row of a message read from the slot and not yet settled, by id. */
  rowOf(id: string): ClaimedRow | undefined {
    return this.#rows.get(id)
  }

  /** Whether `row` came from the slot. */
  owns(row: ClaimedRow): boolean {
    return this.#txOf.has(row)
  }

  /** Hands waiting messages the dispatch mark covers to delivery while slots are free. */
  pump(): void {
    const waiting = this.#waiting
    if (waiting.length === 0) return
    const free = Math.max(0, this.deps.freeSlots())
    const limit = Math.min(free, waiting.length)
    let n = 0
    while (n < limit && this.#mark.covers(this.#endOf(waiting[n]!))) n++
    if (n > 0) {
      const rows = waiting.splice(0, n)
      for (const row of rows) this.#rows.set(row.id, row)
      this.deps.onRows(rows)
    }
    this.#markAhead(free - n)
    if (this.#paused && waiting.length < this.#highWater() / 2) {
      this.#paused = false
      this.#reader?.resume()
    }
  }

  /** These messages are settled (delivered, or moved into the table): the slot may move past them. */
  settled(rows: readonly ClaimedRow[]): void {
    for (const row of rows) {
      const tx = this.#txOf.get(row)
      if (!tx) continue
      this.#txOf.delete(row)
      if (this.#rows.get(row.id) === row) this.#rows.delete(row.id)
      tx.outstanding--
    }
    this.#advance()
  }

  /** Stops reading: confirms what is settled and closes the replication connection. */
  async stop(): Promise<void> {
    this.#running = false
    clearInterval(this.#health)
    const ready = this.#connector.ready
    const reader = this.#connector.stop()
    this.#reader = undefined
    this.#waiting = []
    if (!reader) return
    this.#advance(reader)
    // Every message handed over is settled: a restart should count no attempt for the rest.
    if (ready && this.#rows.size === 0 && this.#moving === 0)
      await this.deps.wal
        .writeDispatchMark(this.deps.outbox, this.#confirmations.lastSent, true)
        .catch((error) => this.deps.reportError(error))
    await reader.close().catch((error) => this.deps.reportError(error))
  }

  /** Keeps the mark ahead of what is handed over: covering the next `free` + {@link MARK_AHEAD} messages. */
  #markAhead(free: number): void {
    const waiting = this.#waiting
    if (waiting.length === 0) return
    const soon = waiting[Math.min(waiting.length, free + MARK_AHEAD / 2) - 1]!
    if (this.#mark.covers(this.#endOf(soon))) return
    this.#mark.extend(this.#endOf(waiting[Math.min(waiting.length, free + MARK_AHEAD) - 1]!))
  }

  #endOf(row: ClaimedRow): bigint {
    return this.#txOf.get(row)!.endLsn
  }

  #highWater(): number {
    return Math.max(1_000, this.deps.freeSlots() * 2)
  }

  /** The slot is ours and its dispatch mark known: what the stream sends from here is classified by it. */
  #onReady(reader: WalReader, mark: bigint): void {
    this.#reader = reader
    this.#replayUpTo = mark
    this.#replayLogged = false
    this.#mark.reset(mark)
    void this.#checkHealth()
  }

  #onTransaction(tx: WalTransaction): void {
    const open = this.#confirmations.open(tx.endLsn, tx.rows.length)
    for (const row of tx.rows) this.#txOf.set(row, open)
    if (tx.endLsn <= this.#replayUpTo) {
      this.#onReplay(tx)
      return
    }
    const foreign: ClaimedRow[] = []
    for (const row of tx.rows) {
      if (this.deps.topics.has(row.topic)) this.#waiting.push(row)
      else foreign.push(row)
    }
    if (foreign.length > 0) this.#moveOut(foreign, foreign.map(foreignMove))
    this.pump()
    if (!this.#paused && this.#waiting.length >= this.#highWater()) {
      this.#paused = true
      this.#reader?.pause()
    }
  }

  /** A transaction at or below the dispatch mark: possibly attempted, its messages go to the table. */
  #onReplay(tx: WalTransaction): void {
    if (!this.#replayLogged) {
      this.#replayLogged = true
      this.deps.log.log(
        'warn',
        { table: this.deps.outbox.table.display, dispatchMark: this.#replayUpTo.toString() },
        'the replication slot streams again messages a relay may have handed to handlers before it stopped without settling them: they move into the table, that attempt counted',
      )
    }
    this.#moveOut(tx.rows, tx.rows.map(this.deps.replayMove))
  }

  /** Moves messages into the table (a move of a row already there does nothing), then settles them here. */
  #moveOut(rows: readonly ClaimedRow[], moves: readonly WalMove[], failures = 0): void {
    this.#moving++
    this.deps.wal.moveToTable(this.deps.outbox.table, moves).then(
      () => {
        this.#moving--
        this.settled(rows)
      },
      (error) => {
        this.#moving--
        this.deps.reportError(error)
        if (!this.#running) return
        setTimeout(
          () => this.#moveOut(rows, moves, failures + 1),
          backoffDelay(SETTLE_BACKOFF, failures + 1),
        ).unref?.()
      },
    )
  }

  /** Confirms up to the end of the last transaction whose messages are all settled. */
  #advance(reader: WalReader | undefined = this.#reader): void {
    const lsn = this.#confirmations.next(this.#waiting.length === 0)
    if (lsn > 0n && reader) {
      reader.confirm(lsn)
      this.#confirmations.sent(lsn)
    }
  }

  /** The stream ended: what was read and not settled is read again from the slot, so forget it here. */
  #onEnd(): void {
    this.#reader = undefined
    this.#confirmations.reset()
    this.#waiting = []
    this.#mark.reset(0n)
    this.#paused = false
  }

  #checkHealth(): Promise<void> {
    return warnIfSlotRetains(this.deps.wal, this.deps.outbox, this.deps.slotWarnBytes, this.deps.log)
  }
}
