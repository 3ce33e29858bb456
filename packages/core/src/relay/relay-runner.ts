import type { Outbox } from '../outbox/define-outbox.js'
import { OutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'
import type { ClaimedRow, WakeSubscription } from '../protocol/backend.js'
import type { SafeLogger } from '../telemetry/logger.js'
import { announceDeadAtClaim, announceOutcome, type RelayCounters } from './announce.js'
import type { Claimer } from './claimer.js'
import { type DeliveryDeps, deliver, giveUp } from './delivery.js'
import { TypedEmitter } from './emitter.js'
import { abortHandler, type InFlight, type SlotTable } from './in-flight.js'
import type { LeaseKeeper } from './lease-keeper.js'
import { RelayLifecycle } from './lifecycle.js'
import type { Outcome } from './outcome.js'
import type { ResolvedRelayOptions } from './relay-options.js'
import { createRelayParts } from './relay-parts.js'
import type { RelayTelemetry } from './relay-telemetry.js'
import type { Relay, RelayEvents, RelayStats, StopOptions } from './relay-types.js'
import type { Settler } from './settler.js'
import { listenForWakeups } from './wake-listener.js'
import { createWalParts, type WalParts } from './wal-parts.js'

/** What a relay is made of, besides its own parts. */
export interface RelayCollaborators {
  readonly outbox: Outbox
  readonly options: ResolvedRelayOptions
  readonly log: SafeLogger
  readonly telemetry: RelayTelemetry
}

/** The longest delay `setTimeout` honours (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1

/** Waits for `promise`, at most `ms`. */
async function within(promise: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}

/**
 * A relay: the parts (slots, claimer, lease keeper, delivery, settler, lifecycle) and the few
 * reactions that pass a message from one to the next. Each part owns its state; this class owns
 * only the counters, the events and the LISTEN subscription.
 */
export class RelayRunner implements Relay {
  readonly #lifecycle = new RelayLifecycle()
  readonly #counters: RelayCounters = { claimed: 0, delivered: 0, retried: 0, deadLettered: 0, errors: 0 }
  readonly #emitter = new TypedEmitter<RelayEvents>((error) => this.#reportError(error, 'listener'))
  readonly #c: RelayCollaborators
  readonly #slots: SlotTable
  readonly #claimer: Claimer
  readonly #leases: LeaseKeeper
  readonly #settler: Settler
  readonly #delivery: DeliveryDeps
  /** The replication slot's source and settler (`transport: 'wal'`), absent otherwise. */
  readonly #wal: WalParts | undefined
  #subscription: WakeSubscription | undefined

  /** @param collaborators - the outbox, the resolved options, the logger and the telemetry */
  constructor(collaborators: RelayCollaborators) {
    this.#c = collaborators
    const o = collaborators.options
    const parts = createRelayParts(collaborators, {
      onRows: (rows, limit, sentAt) => this.#onRows(rows, limit, sentAt),
      onLapse: (entry, why) => this.#abandon(entry, why),
      onWritten: (batch, applied) => this.#onWritten(batch, applied),
      reportError: (error, during) => this.#reportError(error, during),
    })
    this.#slots = parts.slots
    this.#claimer = parts.claimer
    this.#leases = parts.leases
    this.#settler = parts.settler
    this.#delivery = {
      handlers: o.handlers,
      schemas: o.schemas,
      telemetry: collaborators.telemetry,
      maxAttempts: o.maxAttempts,
      retry: o.retry,
      onOutcome: (entry, outcome) => this.#onOutcome(entry, outcome),
    }
    this.#wal = o.wal
      ? createWalParts(collaborators, {
          // None while stopping: the slot source then hands nothing over that would not run.
          freeSlots: () => (this.#lifecycle.running ? this.#slots.free() : 0),
          onRows: (rows) => this.#onWalRows(rows),
          onWritten: (batch) => this.#onWritten(batch, undefined),
          reportError: (error, during) => this.#reportError(error, during),
        })
      : undefined
  }

  /** Whether the relay is running. */
  get running(): boolean {
    return this.#lifecycle.running
  }

  /** Counters since the relay was created. */
  get stats(): Readonly<RelayStats> {
    return { ...this.#counters, inFlight: this.#slots.held }
  }

  /** Subscribes to an event; returns an unsubscribe function. */
  on<K extends keyof RelayEvents>(event: K, listener: (event: RelayEvents[K]) => void): () => void {
    return this.#emitter.on(event, listener)
  }

  /** Asks for a claim now (as a NOTIFY would). */
  wake(): void {
    this.#claimer.request()
  }

  /** Starts claiming and delivering; resolves once running. */
  async start(): Promise<void> {
    if (this.#lifecycle.stopping) await this.#lifecycle.stopping
    if (this.#wal && !this.#lifecycle.running) await this.#c.options.backend.wal!.check()
    if (!this.#lifecycle.toRunning()) return
    this.#wal?.source.start()
    this.#claimer.start()
    this.#leases.start()
    if (this.#c.options.notify) {
      const subscription = await listenForWakeups({
        backend: this.#c.options.backend,
        channel: this.#c.outbox.channel,
        table: this.#c.outbox.table,
        log: this.#c.log,
        onWake: () => this.#claimer.request(),
        onUnavailable: (reason) => this.#emitter.emit('listenUnavailable', { reason }),
        reportError: (error, during) => this.#reportError(error, during),
      })
      if (!this.#lifecycle.running) {
        await subscription?.close().catch(() => {})
        return
      }
      this.#subscription = subscription
    }
    this.#claimer.request()
  }

  /** Stops claiming, drains running handlers up to the grace, aborts the rest, releases the backend. */
  stop(options: StopOptions = {}): Promise<void> {
    if (this.#lifecycle.stopping) return this.#lifecycle.stopping
    const graceMs = options.graceMs ?? this.#c.options.graceMs
    if (typeof graceMs !== 'number' || !(graceMs >= 0)) {
      return Promise.reject(
        new OutboxError(
          'INVALID_CONFIG',
          `stop graceMs must be a number >= 0, got ${formatValue(graceMs)}.`,
          {
            source: 'relay',
          },
        ),
      )
    }
    this.#claimer.stop()
    return this.#lifecycle.toStopping(() => this.#drain(graceMs))
  }

  async #drain(graceMs: number): Promise<void> {
    const subscription = this.#subscription
    this.#subscription = undefined
    await subscription?.close().catch((error) => this.#reportError(error, 'listen'))
    // Wait for handlers (and their settles) up to the grace, then abort stragglers.
    await within(this.#slots.whenIdle(), graceMs)
    for (const entry of this.#slots.running())
      this.#abandon(entry, 'the relay is stopping and the grace period ended')
    this.#leases.stop()
    // Give queued settles a last, bounded chance; anything left is re-delivered after its lease.
    const settlers = this.#wal ? [this.#settler, this.#wal.settler] : [this.#settler]
    if (settlers.some((s) => s.busy)) {
      for (const s of settlers) s.retryNow()
      await within(this.#slots.whenIdle(), Math.max(1_000, graceMs))
      for (const s of settlers) s.cancelRetry()
    }
    await within(this.#claimer.whenIdle(), Math.max(1_000, graceMs))
    await this.#wal?.source.stop()
    // Also when the relay never started: a connection-string backend opened by migrate() must
    // not keep the process alive. A backend never closes what it was given.
    await this.#c.options.backend.close().catch((error) => this.#reportError(error, 'settle'))
  }

  /** A claim returned: dead-lettered rows are announced, the others get a slot and their handler. */
  #onRows(rows: readonly ClaimedRow[], limit: number, sentAt: number): void {
    this.#counters.claimed += rows.length
    if (this.#emitter.has('claimed')) this.#emitter.emit('claimed', { count: rows.length, limit })
    const leaseUntil = sentAt + this.#c.options.leaseMs
    const taken: InFlight[] = []
    for (const row of rows) {
      if (row.state === 'dead') this.#onDeadAtClaim(row)
      else if (this.#lifecycle.running) taken.push(this.#slots.take(row, leaseUntil))
    }
    this.#leases.watchClaim(taken, leaseUntil)
    for (const entry of taken) deliver(entry, this.#delivery)
  }

  /**
   * Messages read from the replication slot: a slot each and their handler. No row to lease (the
   * heartbeat skips them): their deadline is `maxHandlerMs` (the lease without a heartbeat), past
   * which the handler is given up on and the message moves into the table as a failed attempt.
   */
  #onWalRows(rows: readonly ClaimedRow[]): void {
    this.#counters.claimed += rows.length
    if (this.#emitter.has('claimed'))
      this.#emitter.emit('claimed', { count: rows.length, limit: rows.length })
    if (!this.#lifecycle.running) return
    const taken = rows.map((row) => this.#slots.take(row, Number.POSITIVE_INFINITY))
    const { heartbeatMs, leaseMs, maxHandlerMs } = this.#c.options
    const deadlineMs = heartbeatMs === false ? leaseMs : maxHandlerMs
    // The reason is the deadline's own: a timer may fire a millisecond before the run time says so.
    const why =
      heartbeatMs === false
        ? `the handler ran past leaseMs (${leaseMs} ms; the heartbeat is off)`
        : `the handler ran past maxHandlerMs (${maxHandlerMs} ms)`
    if (deadlineMs <= MAX_TIMER_MS) this.#leases.watchClaim(taken, Date.now() + deadlineMs, why)
    for (const entry of taken) deliver(entry, this.#delivery)
  }

  #onDeadAtClaim(row: ClaimedRow): void {
    announceDeadAtClaim(row, this.#emitter, this.#counters)
    // A dead head that does not block its key: the key's next message is claimable now.
    if (row.ordered && this.#c.outbox.deadLetterContinues.has(row.topic)) this.#claimer.want()
  }

  /** A handler's outcome is known: unless it was abandoned meanwhile, it goes to the settler. */
  #onOutcome(entry: InFlight, outcome: Outcome): void {
    if (!this.#slots.toSettling(entry)) return
    this.#leases.unwatch(entry)
    // With maxPendingOutcomes the slot runs the next message while the outcome waits for its settle.
    if (this.#c.options.maxPendingOutcomes > 0) this.#claimer.pumpSoon()
    if (this.#wal?.source.owns(entry.row)) this.#wal.settler.enqueue(outcome)
    else this.#settler.enqueue(outcome)
  }

  /** A batch of outcomes was written: free the slots, announce, then claim once for the batch. */
  #onWritten(batch: readonly Outcome[], applied: ReadonlySet<string> | undefined): void {
    const { pollIntervalMs } = this.#c.options
    let headDone = false
    for (const outcome of batch) this.#slots.release(outcome.entry)
    for (const outcome of batch) {
      const { settlement } = outcome
      const settled = applied === undefined || applied.has(settlement.id)
      announceOutcome(outcome, settled, this.#emitter, this.#counters)
      // A retry due before the next poll: claim when it is due.
      if (settled && settlement.outcome === 'retry' && settlement.delayMs < pollIntervalMs)
        this.#claimer.requestIn(settlement.delayMs + 5)
      if (outcome.entry.row.ordered && settlement.outcome !== 'retry') headDone = true
    }
    // A settled head of an ordered key: the key's next message may be claimable now.
    if (headDone) this.#claimer.want()
    this.#claimer.pump()
    this.#wal?.source.pump()
  }

  /**
   * Gives up a running handler (its lease lapsed, or the relay stops): aborted, never settled. A
   * slot message has no lease another relay could take over: its give-up is a failed attempt,
   * moved into the table like a thrown error, so the slot may be confirmed past it.
   */
  #abandon(entry: InFlight, why: string): void {
    if (entry.phase !== 'running') return
    const { row } = entry
    if (this.#wal?.source.owns(row)) {
      const error = new OutboxError('RELAY_STATE', `handler aborted: ${why}`, { source: 'relay' })
      this.#c.log.log(
        'warn',
        { table: this.#c.outbox.table.display, id: row.id, topic: row.topic, attempts: row.attempts },
        `handler aborted: ${why}; the message moves into the table as a failed attempt`,
      )
      abortHandler(entry, error)
      giveUp(entry, this.#delivery, error)
      return
    }
    this.#c.log.log(
      'warn',
      { table: this.#c.outbox.table.display, id: row.id, topic: row.topic, attempts: row.attempts },
      `handler aborted: ${why}; the message will be delivered again`,
    )
    abortHandler(entry, new OutboxError('RELAY_STATE', `handler aborted: ${why}`, { source: 'relay' }))
    this.#leases.unwatch(entry)
    this.#slots.release(entry)
    this.#claimer.pump()
    this.#wal?.source.pump()
  }

  #reportError(error: unknown, during: RelayEvents['error']['during']): void {
    this.#counters.errors++
    this.#emitter.emit('error', { error, during })
  }
}
