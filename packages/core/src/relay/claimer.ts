import type { ClaimedRow } from '../protocol/backend.js'
import { backoffDelay, CLAIM_BACKOFF } from './backoff.js'

/**
 * While slots are busy, how long a claim waits for half a batch of them to free before it claims
 * fewer rows: a backlog drains in full batches, and a slot held by a slow handler does not keep the
 * others idle for long.
 */
export const SMALL_CLAIM_WAIT_MS = 20

/** What the claimer calls. Passed in, so the claimer holds no relay state but its own. */
export interface ClaimerDeps {
  /** Sends one claim statement for at most `limit` rows. */
  claim(limit: number): Promise<readonly ClaimedRow[]>
  /** How many rows the relay's slots can take now. */
  freeSlots(): number
  /** How many rows the relay holds now. */
  heldSlots(): number
  /** A claim returned `rows` (sent at `sentAt`, for at most `limit`). */
  onRows(rows: readonly ClaimedRow[], limit: number, sentAt: number): void
  /** A claim failed; the next one goes out after `retryInMs` (or at a wake-up). */
  onError(error: unknown, failures: number, retryInMs: number): void
  /** A claim worked again after `failures` failed ones. */
  onRecovered(failures: number): void
}

/** How the claimer paces claims. */
export interface ClaimerSettings {
  readonly batchSize: number
  /** Below this many free slots, a claim waits (up to SMALL_CLAIM_WAIT_MS) while slots are busy. */
  readonly minClaim: number
  readonly pollIntervalMs: number
  /** Whether a claim may go out while another is in flight (a backlog); false for ordered topics. */
  readonly mayOverlap: boolean
}

/**
 * Decides when the relay claims and how many rows: polling (the source of truth), wake-ups,
 * overlapping claims while a backlog lasts, the wait for half a batch of free slots, and backoff
 * after failed claims. Owns its timers; `stop()` clears them all.
 */
export class Claimer {
  #mode: 'stopped' | 'running' = 'stopped'
  /** Claim statements sent and not yet answered. */
  #inFlight = 0
  /** Slots promised to the claims in flight (their limits). */
  #reserved = 0
  /** The last claim came back full: more rows are probably due, so another claim may overlap it. */
  #backlog = false
  /** A claim is wanted (a wake-up, a poll, freed slots after a full claim). */
  #wanted = false
  #failures = 0
  /** The wait for half a batch of free slots is over: claim what is free. */
  #smallClaimDue = false
  #pumpQueued = false
  #pollTimer: ReturnType<typeof setTimeout> | undefined
  #smallClaimTimer: ReturnType<typeof setTimeout> | undefined
  #soonTimer: ReturnType<typeof setTimeout> | undefined
  #idleWaiters: (() => void)[] = []

  /** @param deps - the claim statement, the slots and the relay's reactions */
  constructor(
    private readonly deps: ClaimerDeps,
    private readonly settings: ClaimerSettings,
  ) {}

  /** Claim statements sent and not yet answered. */
  get inFlight(): number {
    return this.#inFlight
  }

  /** Allows claims; the first goes out at the next {@link request}. */
  start(): void {
    this.#mode = 'running'
  }

  /** Stops claiming: no new claim goes out; claims in flight still return (see {@link whenIdle}). */
  stop(): void {
    this.#mode = 'stopped'
    for (const t of [this.#pollTimer, this.#soonTimer, this.#smallClaimTimer]) if (t) clearTimeout(t)
    this.#pollTimer = this.#soonTimer = this.#smallClaimTimer = undefined
  }

  /** Asks for a claim now (a wake-up, a poll). */
  request(): void {
    this.#wanted = true
    this.pump()
  }

  /** Marks a claim as wanted; it goes out at the next {@link pump}. */
  want(): void {
    if (this.#mode === 'running') this.#wanted = true
  }

  /** Asks for a claim `delayMs` from now (a retry due before the next poll). */
  requestIn(delayMs: number): void {
    if (this.#mode !== 'running') return
    if (this.#soonTimer) clearTimeout(this.#soonTimer)
    this.#soonTimer = setTimeout(() => {
      this.#soonTimer = undefined
      this.request()
    }, delayMs)
    this.#soonTimer.unref?.()
  }

  /** Runs {@link pump} once after the current burst of completions. */
  pumpSoon(): void {
    if (this.#pumpQueued) return
    this.#pumpQueued = true
    setImmediate(() => {
      this.#pumpQueued = false
      this.pump()
    })
  }

  /**
   * Sends the claims that are wanted and that the slots allow. Another claim while one is in flight
   * only when the last came back full (a backlog) and claims work; the slots reserved by the claims in
   * flight bound how many overlap.
   */
  pump(): void {
    const overlap = this.#backlog && this.#failures === 0 && this.settings.mayOverlap
    while (this.#mode === 'running' && this.#wanted && (this.#inFlight === 0 || overlap)) {
      if (!this.#claimOnce()) return
    }
  }

  /** Resolves when no claim statement is in flight. */
  whenIdle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve()
    return new Promise((resolve) => this.#idleWaiters.push(resolve))
  }

  /** Sends one claim if slots allow. Returns whether it did. */
  #claimOnce(): boolean {
    const limit = this.#limitNow()
    if (limit === 0) return false
    // With a backlog, the next claim may go out at once (the loop in `pump`); otherwise one at a time.
    this.#wanted = this.#backlog
    this.#inFlight++
    this.#reserved += limit
    const sentAt = Date.now()
    if (this.#pollTimer) clearTimeout(this.#pollTimer)
    this.#pollTimer = undefined
    this.deps.claim(limit).then(
      (rows) => this.#claimed(rows, limit, sentAt),
      (error) => this.#failed(error, limit),
    )
    return true
  }

  /** The rows the next claim may ask for: 0 while it should wait. */
  #limitNow(): number {
    const free = this.deps.freeSlots() - this.#reserved
    if (free <= 0) return 0
    const busy = this.deps.heldSlots() + this.#reserved > 0
    if (free < this.settings.minClaim && busy && !this.#smallClaimDue) {
      // Slots free up as handlers and settles finish: wait for half a batch of them (one claim of
      // many rows instead of many claims of one), but not for long.
      this.#smallClaimTimer ??= this.#unrefTimer(() => {
        this.#smallClaimTimer = undefined
        this.#smallClaimDue = true
        this.pump()
      }, SMALL_CLAIM_WAIT_MS)
      return 0
    }
    if (this.#smallClaimTimer) clearTimeout(this.#smallClaimTimer)
    this.#smallClaimTimer = undefined
    this.#smallClaimDue = false
    return Math.min(free, this.settings.batchSize)
  }

  #claimed(rows: readonly ClaimedRow[], limit: number, sentAt: number): void {
    this.#settled(limit)
    if (this.#failures > 0) this.deps.onRecovered(this.#failures)
    this.#failures = 0
    this.deps.onRows(rows, limit, sentAt)
    this.#backlog = rows.length >= limit
    if (this.#backlog) this.want()
    if (this.#wanted) this.pump()
    this.#armPoll(this.settings.pollIntervalMs)
  }

  #failed(error: unknown, limit: number): void {
    this.#settled(limit)
    this.#backlog = false
    this.#failures++
    this.#wanted = false
    const retryInMs = Math.max(1, backoffDelay(CLAIM_BACKOFF, this.#failures))
    this.deps.onError(error, this.#failures, retryInMs)
    this.#armPoll(retryInMs)
  }

  /** A claim statement returned (rows or error). */
  #settled(limit: number): void {
    this.#inFlight--
    this.#reserved -= limit
    if (this.#inFlight === 0) {
      const waiters = this.#idleWaiters
      this.#idleWaiters = []
      for (const w of waiters) w()
    }
  }

  /**
   * The next poll. Not unref'd: a started relay keeps the process alive until `stop()`, like a
   * server, even on a backend that holds no socket (SQLite). Every other relay timer is unref'd.
   */
  #armPoll(delayMs: number): void {
    if (this.#mode !== 'running') return
    if (this.#pollTimer) clearTimeout(this.#pollTimer)
    this.#pollTimer = setTimeout(() => {
      this.#pollTimer = undefined
      this.request()
    }, delayMs)
  }

  #unrefTimer(fn: () => void, ms: number): ReturnType<typeof setTimeout> {
    const t = setTimeout(fn, ms)
    t.unref?.()
    return t
  }
}
