import type { InFlight, LeaseBatch } from './in-flight.js'

/** What the lease keeper calls. */
export interface LeaseKeeperDeps {
  /**
   * Extends the leases of these rows by `leaseMs`, fenced by attempts; resolves to the ids it did
   * extend. Absent when the backend cannot (then the heartbeat is off).
   */
  extend?: ((rows: { id: string; attempts: number }[]) => Promise<readonly string[]>) | undefined
  /** The messages whose handlers still run. */
  running(): InFlight[]
  /** A running handler's lease lapsed (or could not be extended): abort it, give its slot back. */
  onLapse(entry: InFlight, why: string): void
  /** An extension statement failed; the lease timers still fire at the real lapse. */
  onExtendFailed(error: unknown, messages: number): void
}

/** The lease settings of a relay. */
export interface LeaseSettings {
  readonly leaseMs: number
  /** Period of the heartbeat, or false when it is off. */
  readonly heartbeatMs: number | false
  /** Past this run time a handler's lease is no longer extended. */
  readonly maxHandlerMs: number
}

/**
 * Watches the leases of running handlers: one timer per claim (its rows share the claim's lease),
 * the heartbeat that extends the leases of handlers still running in one fenced statement, and the
 * lapse that aborts a handler whose lease really ended (another relay may reclaim the message).
 */
export class LeaseKeeper {
  #heartbeat: ReturnType<typeof setInterval> | undefined
  #extending = false

  /** @param deps - the extension statement, the running handlers and the relay's reactions */
  constructor(
    private readonly deps: LeaseKeeperDeps,
    private readonly settings: LeaseSettings,
  ) {}

  /** Starts the heartbeat (when on). */
  start(): void {
    const { heartbeatMs } = this.settings
    if (heartbeatMs === false || !this.deps.extend || this.#heartbeat) return
    this.#heartbeat = setInterval(() => this.beat(), heartbeatMs)
    this.#heartbeat.unref?.()
  }

  /** Stops the heartbeat; the lease timers of handlers still held keep running. */
  stop(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat)
    this.#heartbeat = undefined
  }

  /**
   * Watches the rows of one claim, whose shared lease ends at `leaseUntil`. `why` is the reason
   * given at its lapse when the caller knows it (a deadline rather than a lease); otherwise it is
   * told from the handler's run time.
   */
  watchClaim(entries: readonly InFlight[], leaseUntil: number, why?: string): void {
    if (entries.length === 0) return
    const batch: LeaseBatch = { remaining: entries.length }
    for (const e of entries) e.lease.batch = batch
    batch.timer = setTimeout(
      () => {
        batch.timer = undefined
        // Rare (a lapse): scan the running handlers rather than keep every row of every batch alive.
        for (const e of this.deps.running())
          if (e.lease.batch === batch) this.deps.onLapse(e, why ?? this.#lapseReason(e))
      },
      Math.max(0, leaseUntil - Date.now()),
    )
    batch.timer.unref?.()
  }

  /** Stops watching the lease (its outcome is known, or it was given up). */
  unwatch(entry: InFlight): void {
    const { lease } = entry
    if (lease.timer) clearTimeout(lease.timer)
    lease.timer = undefined
    const batch = lease.batch
    if (!batch) return
    lease.batch = undefined
    if (--batch.remaining === 0 && batch.timer) {
      clearTimeout(batch.timer)
      batch.timer = undefined
    }
  }

  /**
   * One heartbeat: extends, in one statement, the lease of every running handler's message that has
   * used up half a heartbeat of it. A message whose extension did not apply was claimed again or
   * changed meanwhile (its lease had lapsed): its handler is aborted, as at a lapse.
   */
  beat(): void {
    const { extend } = this.deps
    const { heartbeatMs, leaseMs, maxHandlerMs } = this.settings
    if (this.#extending || heartbeatMs === false || !extend) return
    const sentAt = Date.now()
    const due = this.deps
      .running()
      // Past maxHandlerMs the lease is left to lapse: the lease timer then aborts the handler.
      .filter(
        (e) => sentAt + leaseMs - e.lease.until >= heartbeatMs / 2 && sentAt - e.startedAt < maxHandlerMs,
      )
    if (due.length === 0) return
    this.#extending = true
    extend(due.map((e) => ({ id: e.row.id, attempts: e.row.attempts })))
      .then(
        (ids) => this.#extended(due, new Set(ids), sentAt),
        (error) => this.deps.onExtendFailed(error, due.length),
      )
      .finally(() => {
        this.#extending = false
      })
  }

  #extended(due: readonly InFlight[], extended: ReadonlySet<string>, sentAt: number): void {
    for (const e of due) {
      if (e.phase !== 'running') continue
      if (!extended.has(e.row.id)) {
        this.deps.onLapse(
          e,
          'its lease could not be extended (it lapsed and was claimed again, or it changed)',
        )
        continue
      }
      e.lease.until = sentAt + this.settings.leaseMs
      this.#armOwnTimer(e)
    }
  }

  /** Aborts the handler when its (extended) lease really lapses: each extension re-arms it. */
  #armOwnTimer(entry: InFlight): void {
    this.unwatch(entry)
    entry.lease.timer = setTimeout(
      () => this.deps.onLapse(entry, this.#lapseReason(entry)),
      Math.max(0, entry.lease.until - Date.now()),
    )
    entry.lease.timer.unref?.()
  }

  #lapseReason(entry: InFlight): string {
    return this.settings.heartbeatMs !== false && Date.now() - entry.startedAt >= this.settings.maxHandlerMs
      ? `lease expired: the handler ran past maxHandlerMs (${this.settings.maxHandlerMs} ms), so its lease was no longer extended`
      : 'lease expired while the handler was still running'
  }
}
