import { backoffDelay, SETTLE_BACKOFF } from './backoff.js'

/** What the dispatch mark calls. */
export interface DispatchMarkDeps {
  /** Writes the mark (forward only) to `lsn`. */
  write(lsn: bigint): Promise<void>
  /** The mark now covers more: messages up to it may be handed to handlers. */
  onCovered(): void
  /** A write failed; it is tried again in `retryInMs`. */
  onFailed(error: unknown, retryInMs: number): void
}

/**
 * The slot reader's side of the dispatch mark (docs/wal.md, "Replays and attempts"): a durable
 * LSN that must cover a transaction before any of its messages is handed to a handler, so that a
 * reader taking the slot over after a crash knows which transactions were (possibly) attempted.
 * One write at a time; each covers as far ahead as the caller asks, so a drain pays one
 * statement per few hundred messages.
 */
export class DispatchMark {
  #covered = 0n
  #writing = false
  #failures = 0
  /** Bumped by {@link DispatchMark.reset}: a write of an earlier stream no longer counts. */
  #epoch = 0

  /** @param deps - the mark's statement and the source's reactions */
  constructor(private readonly deps: DispatchMarkDeps) {}

  /** A new stream: the mark read from the database once the slot was taken. */
  reset(lsn: bigint): void {
    this.#covered = lsn
    this.#writing = false
    this.#failures = 0
    this.#epoch++
  }

  /** Whether the transaction ending at `lsn` may be handed to handlers. */
  covers(lsn: bigint): boolean {
    return lsn <= this.#covered
  }

  /** Starts a write that covers `lsn`, unless it is covered or a write is under way. */
  extend(lsn: bigint): void {
    if (this.#writing || lsn <= this.#covered) return
    this.#writing = true
    const epoch = this.#epoch
    this.deps.write(lsn).then(
      () => {
        if (epoch !== this.#epoch) return
        this.#writing = false
        this.#failures = 0
        if (lsn > this.#covered) this.#covered = lsn
        this.deps.onCovered()
      },
      (error) => {
        if (epoch !== this.#epoch) return
        const retryInMs = backoffDelay(SETTLE_BACKOFF, ++this.#failures)
        this.deps.onFailed(error, retryInMs)
        setTimeout(() => {
          if (epoch !== this.#epoch) return
          this.#writing = false
          this.deps.onCovered()
        }, retryInMs).unref?.()
      },
    )
  }
}
