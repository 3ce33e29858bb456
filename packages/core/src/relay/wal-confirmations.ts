/** A transaction read from the slot whose messages are not all settled. */
export interface OpenTransaction {
  readonly endLsn: bigint
  outstanding: number
}

/**
 * How far the slot may be confirmed (docs/wal.md, "Confirmation"): up to the end of the last
 * transaction whose every message is settled and every earlier one too, or, with nothing
 * outstanding, up to the stream's last position (a keepalive, a transaction of other prefixes).
 */
export class WalConfirmations {
  #open: OpenTransaction[] = []
  #progress = 0n
  #confirmable = 0n
  #sent = 0n

  /** A transaction of `messages` messages was read: it holds the confirmation until they are settled. */
  open(endLsn: bigint, messages: number): OpenTransaction {
    const tx: OpenTransaction = { endLsn, outstanding: messages }
    this.#open.push(tx)
    return tx
  }

  /** The stream reached `lsn` with none of this outbox's messages in between. */
  progress(lsn: bigint): void {
    if (lsn > this.#progress) this.#progress = lsn
  }

  /**
   * The LSN to confirm now, or `0n` for none yet. `idle`: no message read waits to be handed
   * over (a waiting one holds the stream's position back too).
   */
  next(idle: boolean): bigint {
    const open = this.#open
    let done = 0
    while (done < open.length && open[done]!.outstanding <= 0) done++
    if (done > 0) {
      this.#confirmable = open[done - 1]!.endLsn
      open.splice(0, done)
    }
    let lsn = this.#confirmable
    if (open.length === 0 && idle && this.#progress > lsn) lsn = this.#progress
    return lsn
  }

  /** `lsn` was sent to the server. */
  sent(lsn: bigint): void {
    if (lsn > this.#sent) this.#sent = lsn
  }

  /** The last confirmation sent. */
  get lastSent(): bigint {
    return this.#sent
  }

  /** The stream ended: what was read is read again. */
  reset(): void {
    this.#open = []
    this.#progress = 0n
    this.#confirmable = 0n
    this.#sent = 0n
  }
}
