import type { ClaimedRow } from '../protocol/backend.js'
import type { DeliveredMessage } from './handler-types.js'

/**
 * Where a claimed message is: its handler runs (`running`), its outcome waits for or is inside a
 * settle statement (`settling`), or its slot is given back (`done`: settled, or abandoned because its
 * lease lapsed or the relay stopped; an abandoned message is never settled).
 */
export type InFlightPhase = 'running' | 'settling' | 'done'

/** The lease of one claimed message, as the lease keeper watches it. */
export interface LeaseState {
  /** When the lease ends, by this process's clock (claim or last extension sent + leaseMs). */
  until: number
  /** The timer shared by the rows of one claim, until the heartbeat extends this row's lease. */
  batch?: LeaseBatch | undefined
  /** This row's own timer, once the heartbeat extended its lease. */
  timer?: ReturnType<typeof setTimeout> | undefined
}

/** One lease timer for the rows of one claim (they share the claim's lease). */
export interface LeaseBatch {
  /** Rows of the batch still watched by this timer. */
  remaining: number
  timer?: ReturnType<typeof setTimeout> | undefined
}

/** A claimed message held by a slot of the relay. */
export interface InFlight {
  readonly row: ClaimedRow
  phase: InFlightPhase
  /** When its handler was called (Date.now()). */
  startedAt: number
  readonly lease: LeaseState
  /** The message as the handler got it (absent until parsed). */
  message?: DeliveredMessage | undefined
  /** Created on first read of the handler's `signal` (most handlers never read it). */
  controller?: AbortController | undefined
  /** Why the handler was aborted, when that happened before it read `signal`. */
  abortReason?: unknown
}

/** The AbortSignal of a handler run, created on first read (most handlers never read it). */
export function signalOf(entry: InFlight): AbortSignal {
  if (!entry.controller) {
    entry.controller = new AbortController()
    if (entry.abortReason !== undefined) entry.controller.abort(entry.abortReason)
  }
  return entry.controller.signal
}

/** Aborts the handler's signal (now, or when the handler first reads it). */
export function abortHandler(entry: InFlight, reason: unknown): void {
  if (entry.controller) entry.controller.abort(reason)
  else entry.abortReason = reason
}

/**
 * The relay's concurrency slots: every claimed message holds one from claim until it is settled or
 * abandoned. With `maxPendingOutcomes > 0` a message whose handler returned no longer counts against
 * the handlers that may run, only against `concurrency + maxPendingOutcomes` held rows.
 */
export class SlotTable {
  readonly #entries = new Set<InFlight>()
  #running = 0
  #idleWaiters: (() => void)[] = []

  /**
   * @param concurrency - the most rows held (claim to settle)
   * @param maxPendingOutcomes - outcomes that may wait for their settle while their slot runs the next handler
   */
  constructor(
    readonly concurrency: number,
    readonly maxPendingOutcomes: number,
  ) {}

  /** Rows held: claimed and not yet settled or abandoned. */
  get held(): number {
    return this.#entries.size
  }

  /** How many more rows a claim may take now. */
  free(): number {
    const free = this.concurrency - this.#entries.size
    if (this.maxPendingOutcomes === 0) return free
    return Math.min(this.concurrency - this.#running, free + this.maxPendingOutcomes)
  }

  /** Takes a slot for a claimed row; its handler is about to run. */
  take(row: ClaimedRow, leaseUntil: number): InFlight {
    const entry: InFlight = { row, phase: 'running', startedAt: Date.now(), lease: { until: leaseUntil } }
    this.#entries.add(entry)
    this.#running++
    return entry
  }

  /** The handler returned: its outcome is on its way to the database. False when it was no longer running. */
  toSettling(entry: InFlight): boolean {
    if (entry.phase !== 'running') return false
    entry.phase = 'settling'
    this.#running--
    return true
  }

  /** Gives the slot back, once. False when it was already given back. */
  release(entry: InFlight): boolean {
    if (entry.phase === 'done') return false
    if (entry.phase === 'running') this.#running--
    entry.phase = 'done'
    this.#entries.delete(entry)
    if (this.#entries.size === 0) this.#wakeIdleWaiters()
    return true
  }

  /** The messages whose handlers still run. */
  running(): InFlight[] {
    const out: InFlight[] = []
    for (const e of this.#entries) if (e.phase === 'running') out.push(e)
    return out
  }

  /** Resolves when no slot is held (every claimed message settled or abandoned). */
  whenIdle(): Promise<void> {
    if (this.#entries.size === 0) return Promise.resolve()
    return new Promise((resolve) => this.#idleWaiters.push(resolve))
  }

  #wakeIdleWaiters(): void {
    const waiters = this.#idleWaiters
    this.#idleWaiters = []
    for (const w of waiters) w()
  }
}
