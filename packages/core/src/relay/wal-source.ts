import type { Outbox } from '../outbox/define-outbox.js'
import type { ClaimedRow } from '../protocol/backend.js'
import type { OutboxWal, WalMove, WalReader, WalTransaction } from '../protocol/wal.js'
import type { SafeLogger } from '../telemetry/logger.js'
import { backoffDelay, SETTLE_BACKOFF } from './backoff.js'

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
}

/** A transaction read from the slot whose messages are not all settled. */
interface OpenTransaction {
  readonly endLsn: bigint
  outstanding: number
}

/** How long a standby waits before asking for the slot again, and the most a failing read backs off. */
const STANDBY_RETRY_MS = 1_000
const HEALTH_EVERY_MS = 30_000

/**
 * The second claim source (docs/wal.md): reads the outbox's replication slot and hands its
 * messages to delivery in commit order, as free slots allow (pausing the stream meanwhile). It
 * confirms the slot only up to the end of the last transaction whose every message is settled,
 * so a crash replays from the oldest unsettled one. One reader per slot: while another relay
 * reads it, this one stands by and asks again every second.
 */
export class WalSource {
  #reader: WalReader | undefined
  #open: OpenTransaction[] = []
  #waiting: ClaimedRow[] = []
  #txOf = new WeakMap<ClaimedRow, OpenTransaction>()
  #rows = new Map<string, ClaimedRow>()
  #progress = 0n
  #confirmable = 0n
  #paused = false
  #running = false
  #failures = 0
  #standbyLogged = false
  #timer: ReturnType<typeof setTimeout> | undefined
  #health: ReturnType<typeof setInterval> | undefined

  /** @param deps - the backend's WAL transport and the relay's reactions */
  constructor(private readonly deps: WalSourceDeps) {}

  /** Starts reading (or standing by). */
  start(): void {
    this.#running = true
    void this.#connect()
    this.#health = setInterval(() => void this.#checkHealth(), HEALTH_EVERY_MS)
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

  /** Hands waiting messages to delivery while slots are free. */
  pump(): void {
    if (this.#waiting.length === 0) return
    const free = this.deps.freeSlots()
    if (free <= 0) return
    const rows = this.#waiting.splice(0, free)
    for (const row of rows) this.#rows.set(row.id, row)
    this.deps.onRows(rows)
    if (this.#paused && this.#waiting.length < this.#highWater() / 2) {
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
    clearTimeout(this.#timer)
    clearInterval(this.#health)
    const reader = this.#reader
    this.#reader = undefined
    this.#waiting = []
    if (reader) {
      this.#advance(reader)
      await reader.close().catch((error) => this.deps.reportError(error))
    }
  }

  #highWater(): number {
    return Math.max(1_000, this.deps.freeSlots() * 2)
  }

  async #connect(): Promise<void> {
    if (!this.#running) return
    const table = this.deps.outbox.table.display
    let reader: WalReader | 'busy'
    try {
      reader = await this.deps.wal.read(this.deps.outbox, {
        onTransaction: (tx) => this.#onTransaction(tx),
        onProgress: (lsn) => {
          if (lsn > this.#progress) this.#progress = lsn
          this.#advance()
        },
        onInvalid: (reason) =>
          this.deps.log.log('error', { table }, `skipped a WAL message that is not outboxkit's: ${reason}`),
        onEnd: (error) => this.#onEnd(error),
      })
    } catch (error) {
      this.#failures++
      this.deps.reportError(error)
      const retryInMs = backoffDelay(SETTLE_BACKOFF, this.#failures)
      this.deps.log.log(
        'warn',
        { table, err: error, retryInMs },
        `reading the replication slot failed; retrying in ${retryInMs} ms`,
      )
      return this.#retry(retryInMs)
    }
    if (reader === 'busy') {
      if (!this.#standbyLogged)
        this.deps.log.log('info', { table }, 'another relay reads the replication slot; standing by')
      this.#standbyLogged = true
      return this.#retry(STANDBY_RETRY_MS)
    }
    if (!this.#running) return void reader.close().catch(() => {})
    this.#failures = 0
    this.#standbyLogged = false
    this.#reader = reader
    this.deps.log.log('info', { table }, 'reading the replication slot')
    void this.#checkHealth()
  }

  #retry(ms: number): void {
    if (!this.#running) return
    this.#timer = setTimeout(() => void this.#connect(), ms)
    this.#timer.unref?.()
  }

  #onTransaction(tx: WalTransaction): void {
    const open: OpenTransaction = { endLsn: tx.endLsn, outstanding: tx.rows.length }
    this.#open.push(open)
    const foreign: ClaimedRow[] = []
    for (const row of tx.rows) {
      this.#txOf.set(row, open)
      if (this.deps.topics.has(row.topic)) this.#waiting.push(row)
      else foreign.push(row)
    }
    if (foreign.length > 0) this.#moveForeign(foreign)
    this.pump()
    if (!this.#paused && this.#waiting.length >= this.#highWater()) {
      this.#paused = true
      this.#reader?.pause()
    }
  }

  /** Messages of topics this relay has no handler for: into the table, pending, for a relay that has one. */
  #moveForeign(rows: ClaimedRow[], failures = 0): void {
    const moves: WalMove[] = rows.map((row) => ({
      row,
      state: 'pending',
      attempts: 0,
      delayMs: 0,
      error: null,
    }))
    this.deps.wal.moveToTable(this.deps.outbox.table, moves).then(
      () => this.settled(rows),
      (error) => {
        this.deps.reportError(error)
        if (!this.#running) return
        setTimeout(
          () => this.#moveForeign(rows, failures + 1),
          backoffDelay(SETTLE_BACKOFF, failures + 1),
        ).unref?.()
      },
    )
  }

  /** Confirms up to the end of the last transaction whose messages are all settled. */
  #advance(reader: WalReader | undefined = this.#reader): void {
    const open = this.#open
    let done = 0
    while (done < open.length && open[done]!.outstanding <= 0) done++
    if (done > 0) {
      this.#confirmable = open[done - 1]!.endLsn
      open.splice(0, done)
    }
    let lsn = this.#confirmable
    if (open.length === 0 && this.#waiting.length === 0 && this.#progress > lsn) lsn = this.#progress
    if (lsn > 0n) reader?.confirm(lsn)
  }

  #onEnd(error: unknown): void {
    // What was read and not settled is read again from the slot: forget it here.
    this.#reader = undefined
    this.#open = []
    this.#waiting = []
    this.#paused = false
    this.#progress = 0n
    this.#confirmable = 0n
    if (!this.#running) return
    this.#failures++
    const retryInMs = Math.min(backoffDelay(SETTLE_BACKOFF, this.#failures), 5_000)
    this.deps.reportError(error ?? new Error('the replication stream ended'))
    this.deps.log.log(
      'warn',
      { table: this.deps.outbox.table.display, err: error, retryInMs },
      `the replication stream ended; reading again in ${retryInMs} ms`,
    )
    this.#retry(retryInMs)
  }

  async #checkHealth(): Promise<void> {
    try {
      const stats = await this.deps.wal.slotStats(this.deps.outbox)
      if (stats && stats.retainedBytes > this.deps.slotWarnBytes) {
        this.deps.log.log(
          'warn',
          { table: this.deps.outbox.table.display, slot: stats.slot, retainedBytes: stats.retainedBytes },
          `the replication slot ${stats.slot} retains ${stats.retainedBytes} bytes of WAL (more than slotWarnBytes ${this.deps.slotWarnBytes}); see docs/wal.md, "Slot safety"`,
        )
      }
    } catch {
      // Health is best effort; the stream reports real failures.
    }
  }
}
