import type { Settlement } from '../protocol/backend.js'
import { backoffDelay, SETTLE_BACKOFF } from './backoff.js'
import type { Outcome } from './outcome.js'

/** What the settler calls. */
export interface SettlerDeps {
  /** Writes these outcomes in one fenced statement; resolves to the ids it applied. */
  write(settlements: Settlement[]): Promise<readonly string[]>
  /**
   * A batch was written. `applied` is undefined when every outcome applied, else the ids that did
   * (the others were fenced out: their row was claimed again meanwhile).
   */
  onWritten(batch: readonly Outcome[], applied: ReadonlySet<string> | undefined): void
  /** Writing a batch failed; it is tried again after `retryInMs`, with what was queued meanwhile. */
  onFailed(error: unknown, failures: number, retryInMs: number, outcomes: number): void
}

/**
 * Writes handler outcomes back in batches: every outcome queued during one turn of the event loop
 * goes into one settle statement; one statement at a time; a failed statement keeps its outcomes
 * (fencing makes a late settle harmless) and is tried again with backoff.
 */
export class Settler {
  #queue: Outcome[] = []
  /** A settle statement is in flight, or about to be sent. */
  #flushing = false
  #failures = 0
  #retryTimer: ReturnType<typeof setTimeout> | undefined

  /** @param deps - the settle statement and the relay's reactions */
  constructor(private readonly deps: SettlerDeps) {}

  /** Queues an outcome; it is written with the others of this turn. */
  enqueue(outcome: Outcome): void {
    this.#queue.push(outcome)
    if (!this.#flushing && !this.#retryTimer) {
      this.#flushing = true
      setImmediate(() => this.#flush())
    }
  }

  /** Outcomes waiting (or being written), or a retry pending. */
  get busy(): boolean {
    return this.#queue.length > 0 || this.#flushing || this.#retryTimer !== undefined
  }

  /** Writes now what waits for a retry after a failure (at stop: one last chance). */
  retryNow(): void {
    if (!this.#retryTimer) return
    clearTimeout(this.#retryTimer)
    this.#retryTimer = undefined
    this.#flushing = true
    this.#flush()
  }

  /** Cancels a pending retry: what is left is delivered again after its lease. */
  cancelRetry(): void {
    if (this.#retryTimer) clearTimeout(this.#retryTimer)
    this.#retryTimer = undefined
  }

  #flush(): void {
    const batch = this.#queue
    this.#queue = []
    if (batch.length === 0) {
      this.#flushing = false
      return
    }
    const settlements = new Array<Settlement>(batch.length)
    for (let i = 0; i < batch.length; i++) settlements[i] = batch[i]!.settlement
    this.deps
      .write(settlements)
      .then(
        (applied) => this.#written(batch, applied),
        (error) => this.#failed(batch, error),
      )
      .finally(() => this.#next())
  }

  #written(batch: Outcome[], applied: readonly string[]): void {
    this.#failures = 0
    // A backend returns the ids it applied, a subset of those sent: as many means all of them.
    this.deps.onWritten(batch, applied.length === batch.length ? undefined : new Set(applied))
  }

  #failed(batch: Outcome[], error: unknown): void {
    this.#failures++
    this.#queue = batch.concat(this.#queue)
    const retryInMs = backoffDelay(SETTLE_BACKOFF, this.#failures)
    this.deps.onFailed(error, this.#failures, retryInMs, batch.length)
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined
      if (this.#flushing) return
      this.#flushing = true
      this.#flush()
    }, retryInMs)
    this.#retryTimer.unref?.()
  }

  /** After a statement: the next batch in the next turn, or rest until an outcome or the retry. */
  #next(): void {
    if (this.#retryTimer || this.#queue.length === 0) {
      this.#flushing = false
      return
    }
    setImmediate(() => this.#flush())
  }
}
