import { assertOutbox, type HandlerPayload, type Outbox, type TopicName } from '../outbox/define-outbox.js'
import { OutboxError, toOutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'
import { formatIssues, type StandardSchemaV1 } from '../outbox/standard-schema.js'
import type { ClaimedRow, OutboxBackend, Settlement, WakeSubscription } from '../protocol/backend.js'
import { type Logger, resolveLogger } from '../telemetry/logger.js'
import { TypedEmitter } from './emitter.js'
import { instrumentRelay } from './instrumentation.js'
import { createRelayTelemetry, type RelayTelemetryOptions } from './relay-telemetry.js'
import {
  backoffDelay,
  Cancel,
  type ResolvedRetryPolicy,
  Retry,
  type RetryPolicy,
  resolveRetryPolicy,
} from './retry.js'

/** A message as a handler receives it. */
export interface DeliveredMessage<TPayload = unknown, TTopic extends string = string> {
  /** UUIDv7 id, stable across redeliveries: use it as your idempotency key. */
  readonly id: string
  readonly topic: TTopic
  readonly key: string | null
  readonly payload: TPayload
  readonly headers: Readonly<Record<string, string>>
  /** 1-based: this delivery's attempt number. */
  readonly attempts: number
  readonly createdAt: Date
}

/** The second argument of a handler. */
export interface HandlerContext {
  /**
   * Aborted when the relay gives up on this run: at the end of `stop({ graceMs })`, or when the
   * message's lease really lapsed while the handler still runs (its extensions failed, or the
   * heartbeat is off and the handler outlived `leaseMs`): another relay may then reclaim it.
   */
  readonly signal: AbortSignal
}

/** A handler of one topic. Resolve to deliver; throw `Retry`, `Cancel` or any error otherwise. */
export type Handler<TPayload = unknown, TTopic extends string = string> = (
  message: DeliveredMessage<TPayload, TTopic>,
  context: HandlerContext,
) => unknown

/**
 * Handlers by topic, typed from the outbox's schemas. Without `topics`, any topic name is
 * accepted and handlers receive `DeliveredMessage<unknown, string>`.
 */
export type Handlers<O extends Outbox<any>> =
  string extends TopicName<O>
    ? { [topic: string]: Handler<unknown, string> | undefined }
    : { [K in TopicName<O>]?: Handler<HandlerPayload<O, K>, K> }

/** Options of {@link createRelay}. */
export interface RelayOptions<O extends Outbox<any>> {
  /** Where messages live: `pgBackend(...)`, `pgliteBackend(db)`, ... */
  backend: OutboxBackend
  /** One handler per topic; the relay claims only these topics. */
  handlers: Handlers<O>
  /**
   * Concurrency slots: the most messages this relay holds at once, from claim until their outcome
   * is written (or, with `maxPendingOutcomes`, until their handler returns). The relay never
   * claims more rows than it has free slots, so this also bounds the handlers running at once, the
   * relay's memory and the messages delivered again if the process dies. Default 1 000 (twice
   * `batchSize`: while a backlog lasts, a second claim runs while the first is in flight or its
   * batch is settled): lower it for handlers that call a rate-limited service, and remember it
   * multiplies by the number of relays (docs/performance.md#defaults).
   */
  concurrency?: number
  /**
   * Most rows per claim statement. While slots are busy the relay waits (at most 20 ms) until
   * half a batch of them is free instead of claiming a few rows at a time. While the last claim
   * came back full (a backlog), the next one goes out without waiting for those in flight, as many
   * as the free slots allow (`concurrency / batchSize`); otherwise, and for a relay that handles
   * an ordered topic, one at a time. Default 500.
   */
  batchSize?: number
  /**
   * Outcomes that may wait for their batched settle statement while their slot already runs the
   * next handler. Default 0: a slot is freed when its outcome is written, so at most
   * `concurrency` rows of this relay are `processing`. With N > 0 a slot is freed when its handler
   * returns, the next claim overlaps the settle, and up to `concurrency + N` rows may be
   * `processing` (and delivered again after a crash); `concurrency` still bounds the handlers
   * running at once. A slow settle applies backpressure: no claim while N outcomes wait.
   */
  maxPendingOutcomes?: number
  /** Poll interval when idle, in ms. Polling is the source of truth. Default 1 500. */
  pollIntervalMs?: number
  /**
   * How long a claimed row stays invisible to other claims, in ms. Default 30 000. While a
   * handler runs, the heartbeat (`heartbeatMs`) keeps extending it, so a handler may run longer
   * than `leaseMs`; a relay that dies stops extending and its messages are reclaimed once their
   * lease lapses, at most `leaseMs` later.
   */
  leaseMs?: number
  /**
   * Lease heartbeat: every `heartbeatMs` the relay extends, in one statement, the lease of the
   * messages whose handlers still run (fenced by attempts), so a long handler is neither aborted
   * nor delivered twice while its relay lives. Default `leaseMs / 3`; at most `leaseMs / 2`.
   * `false` turns it off: a handler still running after `leaseMs` is then aborted and its
   * message delivered again.
   */
  heartbeatMs?: number | false
  /**
   * How long a handler may run while the heartbeat keeps its lease, in ms. Past it the relay stops
   * extending that message's lease: when the lease lapses the handler's `signal` is aborted and
   * the message is delivered again (an attempt, dead-lettered at claim after `maxAttempts`), so a
   * handler that hangs cannot hold its message (or its ordered key) forever. Default
   * `5 × leaseMs` (2.5 minutes with the default lease); raise it for longer handlers, `Infinity`
   * for no bound.
   */
  maxHandlerMs?: number
  /** Deliveries before a message is dead-lettered. Default 10. */
  maxAttempts?: number
  /** Backoff after a handler failure. Default `{ baseMs: 1_000, maxMs: 300_000, jitter: 1 }`. */
  retry?: RetryPolicy
  /** LISTEN for publish wake-ups on top of polling (when the backend supports it). Default `true`. */
  notify?: boolean
  /** Keep delivered rows (`state = 'delivered'`) instead of deleting them. Default `false`. */
  keepDelivered?: boolean
  /** Default grace for {@link Relay.stop}, in ms. Default 10 000. */
  graceMs?: number
  /**
   * Where the relay logs: any object with `debug`/`info`/`warn`/`error` (pino, console, ...).
   * Start/stop, claim and settle errors with their backoff, LISTEN reconnects, retries and dead
   * letters; nothing on the success path. Default: silent.
   */
  logger?: Logger
  /**
   * OpenTelemetry spans and metrics through `@opentelemetry/api` when it is installed (see
   * docs/operations.md). `false` turns them off for this relay. Default `true`.
   */
  telemetry?: boolean | RelayTelemetryOptions
}

/** Why a message was dead-lettered. */
export type DeadLetterReason = 'cancel' | 'max-attempts' | 'schema' | 'invalid-payload'

/** Events a relay emits. Subscribe with {@link Relay.on}. */
export interface RelayEvents {
  /** A handler succeeded and the row was deleted (or marked delivered). */
  delivered: { message: DeliveredMessage; durationMs: number; settled: boolean }
  /** A handler failed; the row is rescheduled. */
  retried: { message: DeliveredMessage; error: unknown; delayMs: number; settled: boolean }
  /** A row was dead-lettered. `message` is absent when it was dead-lettered at claim. */
  deadLettered: {
    id: string
    topic: string
    attempts: number
    reason: DeadLetterReason
    error: string
    message?: DeliveredMessage
    settled: boolean
  }
  /** Something failed that the relay survives (it backs off and carries on). */
  error: { error: unknown; during: 'claim' | 'settle' | 'listen' | 'listener' | 'lease' }
  /** A claim statement returned. */
  claimed: { count: number; limit: number }
}

/** Counters of a relay since it was created. */
export interface RelayStats {
  claimed: number
  delivered: number
  retried: number
  deadLettered: number
  errors: number
  /** Rows claimed and not yet settled or abandoned. */
  inFlight: number
}

/** Options of {@link Relay.stop}. */
export interface StopOptions {
  /** How long to wait for running handlers before aborting them, in ms. */
  graceMs?: number
}

/** A running (or stopped) relay. */
export interface Relay {
  /** Starts claiming and delivering. Resolves once running; does not wait for `stop()`. */
  start(): Promise<void>
  /**
   * Stops claiming, waits up to `graceMs` for running handlers, aborts the signal of those still
   * running, writes the results it has, releases the backend's own connections. Aborted
   * messages are not settled: their leases lapse and they are delivered again.
   */
  stop(options?: StopOptions): Promise<void>
  /** Subscribes to an event; returns an unsubscribe function. */
  on<K extends keyof RelayEvents>(event: K, listener: (event: RelayEvents[K]) => void): () => void
  /** Asks for a claim now (as a NOTIFY would). */
  wake(): void
  /** Whether the relay is running. */
  readonly running: boolean
  /** Counters. */
  readonly stats: Readonly<RelayStats>
}

interface InFlight {
  readonly row: ClaimedRow
  /** Created on first read of the handler's `signal` (most handlers never read it). */
  controller?: AbortController
  /** Why the handler was aborted, when that happened before it read `signal`. */
  abortReason?: unknown
  message?: DeliveredMessage
  startedAt: number
  /** When the lease ends, by this process's clock (claim or last extension sent + leaseMs). */
  leaseUntil: number
  /** The lease timer shared by the rows of one claim, until the heartbeat extends this row's lease. */
  batch?: LeaseBatch
  /** This row's own lease timer, once the heartbeat extended its lease. */
  leaseTimer?: ReturnType<typeof setTimeout>
  /** The handler runs (or is about to): it holds a handler slot. */
  busy: boolean
  /** Given up (lease expired or stop): never settled, slot already released. */
  abandoned: boolean
  /** The handler finished and its outcome is queued or being written: never abort it. */
  settling: boolean
  done: boolean
}

/** One lease timer for the rows of one claim (they share the claim's lease). */
interface LeaseBatch {
  /** Rows of the batch still watched by this timer. */
  remaining: number
  timer?: ReturnType<typeof setTimeout>
}

/** A handler outcome waiting for (or inside) a settle statement. */
interface PendingSettle {
  readonly entry: InFlight
  readonly settlement: Settlement
  /** The message, absent when the row was dead-lettered before it could be parsed. */
  readonly message: DeliveredMessage | undefined
  /** `delivered`: handler run time. */
  readonly durationMs?: number
  /** `retry`: what the handler threw. */
  readonly error?: unknown
  /** `dead`: why, and the full error text. */
  readonly reason?: DeadLetterReason
  readonly deadError?: string
}

/** The AbortSignal of a handler run, created on first read (most handlers never read it). */
function signalOf(entry: InFlight): AbortSignal {
  if (!entry.controller) {
    entry.controller = new AbortController()
    if (entry.abortReason !== undefined) entry.controller.abort(entry.abortReason)
  }
  return entry.controller.signal
}
function positiveInt(name: string, value: unknown, fallback: number): number {
  const v = value ?? fallback
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
    throw new OutboxError('INVALID_CONFIG', `${name} must be an integer >= 1, got ${formatValue(v)}.`, {
      source: 'relay',
    })
  }
  return v
}

function positiveMs(name: string, value: unknown, fallback: number): number {
  const v = value ?? fallback
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${name} must be a finite number of milliseconds > 0, got ${formatValue(v)}.`,
      {
        source: 'relay',
      },
    )
  }
  return v
}

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message || error.name
  if (typeof error === 'string') return error
  try {
    return `non-Error thrown: ${JSON.stringify(error) ?? String(error)}`
  } catch {
    return `non-Error thrown: ${String(error)}`
  }
}

const MAX_ERROR_TEXT = 4_000
const CLAIM_BACKOFF_BASE_MS = 100
const CLAIM_BACKOFF_MAX_MS = 10_000

/**
 * While slots are busy, how long the relay waits for half a batch of them to free before it
 * claims fewer rows: a backlog drains in full batches, and a slot held by a slow handler does not
 * keep the others idle for long.
 */
const SMALL_CLAIM_WAIT_MS = 20
/** The headers of a message published without any. */
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})
/** Default `concurrency` (docs/performance.md#defaults). */
const DEFAULT_CONCURRENCY = 1_000
/** Default `batchSize`. */
const DEFAULT_BATCH_SIZE = 500

/**
 * Creates a relay: the background worker that claims due messages, runs their handler outside
 * any transaction, and settles the outcome. Run one per process, on as many processes as you
 * like: claims are disjoint.
 *
 * @example
 * ```ts
 * const relay = createRelay(outbox, { backend, handlers: { 'order.created': async (m) => send(m.payload) } })
 * await relay.start()
 * process.on('SIGTERM', () => relay.stop({ graceMs: 10_000 }))
 * ```
 * @throws OutboxError `INVALID_CONFIG` for an invalid option or a handler for an unknown topic.
 */
export function createRelay<O extends Outbox<any>>(outbox: O, options: RelayOptions<O>): Relay {
  assertOutbox(outbox, 'relay')
  if (!options || typeof options !== 'object') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `createRelay expects an options object, got ${formatValue(options)}.`,
      { source: 'relay' },
    )
  }
  const backend = options.backend
  if (!backend || typeof backend.claim !== 'function' || typeof backend.settle !== 'function') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `backend must be an OutboxBackend (e.g. pgBackend(...)), got ${formatValue(backend)}.`,
      {
        source: 'relay',
      },
    )
  }
  const handlers = new Map<string, Handler>()
  for (const [topic, handler] of Object.entries(options.handlers ?? {})) {
    if (handler === undefined) continue
    if (typeof handler !== 'function') {
      throw new OutboxError(
        'INVALID_CONFIG',
        `handlers[${JSON.stringify(topic)}] must be a function, got ${formatValue(handler)}.`,
        {
          source: 'relay',
        },
      )
    }
    if (outbox.topics && !outbox.topicNames.has(topic)) {
      throw new OutboxError(
        'INVALID_CONFIG',
        `handlers[${JSON.stringify(topic)}] is for a topic this outbox does not define. Known topics: ${[...outbox.topicNames].join(', ')}.`,
        { source: 'relay' },
      )
    }
    handlers.set(topic, handler as Handler)
  }
  if (handlers.size === 0) {
    throw new OutboxError('INVALID_CONFIG', 'handlers is empty: give at least one topic handler.', {
      source: 'relay',
    })
  }
  const topics = [...handlers.keys()]
  const concurrency = positiveInt('concurrency', options.concurrency, DEFAULT_CONCURRENCY)
  const batchSize = positiveInt('batchSize', options.batchSize, DEFAULT_BATCH_SIZE)
  const maxPendingOutcomes = options.maxPendingOutcomes ?? 0
  if (!Number.isInteger(maxPendingOutcomes) || maxPendingOutcomes < 0) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `maxPendingOutcomes must be an integer >= 0, got ${formatValue(maxPendingOutcomes)}.`,
      { source: 'relay' },
    )
  }
  const maxAttempts = positiveInt('maxAttempts', options.maxAttempts, 10)
  const pollIntervalMs = positiveMs('pollIntervalMs', options.pollIntervalMs, 1_500)
  const leaseMs = positiveMs('leaseMs', options.leaseMs, 30_000)
  const heartbeatMs =
    options.heartbeatMs === false || typeof backend.extendLease !== 'function'
      ? false
      : positiveMs('heartbeatMs', options.heartbeatMs, leaseMs / 3)
  if (heartbeatMs !== false && heartbeatMs > leaseMs / 2) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `heartbeatMs (${heartbeatMs}) must be at most half of leaseMs (${leaseMs}) so an extension lands before the lease lapses, or false to turn the lease heartbeat off.`,
      { source: 'relay' },
    )
  }
  const maxHandlerMs = options.maxHandlerMs ?? 5 * leaseMs
  if (typeof maxHandlerMs !== 'number' || !(maxHandlerMs > 0)) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `maxHandlerMs must be a number of milliseconds > 0 (Infinity for no bound), got ${formatValue(maxHandlerMs)}.`,
      { source: 'relay' },
    )
  }
  // Ordered topics among this relay's: claim only the head of each key (docs/ordering.md).
  const ordering = topics.some((t) => outbox.orderedTopics.has(t))
    ? { continueAfterDead: [...outbox.deadLetterContinues] }
    : undefined
  const defaultGraceMs =
    options.graceMs === undefined ? 10_000 : positiveMs('graceMs', options.graceMs, 10_000)
  const retry: ResolvedRetryPolicy = resolveRetryPolicy(options.retry)
  const notify = options.notify ?? true
  const keepDelivered = options.keepDelivered ?? false
  const schemas = (outbox.topics ?? undefined) as Record<string, StandardSchemaV1> | undefined
  /** Below this many free slots, a claim waits (up to SMALL_CLAIM_WAIT_MS) while slots are busy. */
  const minClaim = Math.ceil(Math.min(concurrency, batchSize) / 2)

  const stats: RelayStats = { claimed: 0, delivered: 0, retried: 0, deadLettered: 0, errors: 0, inFlight: 0 }
  const emitter = new TypedEmitter<RelayEvents>((error) => reportError(error, 'listener'))
  const log = resolveLogger(options.logger)
  const telemetry = createRelayTelemetry(options.telemetry, {
    outbox,
    backend,
    topics,
    maxAttempts,
    keepDelivered,
    log,
  })
  const entries = new Set<InFlight>()
  let settleQueue: PendingSettle[] = []
  /** Handlers running (or about to): at most `concurrency`. `stats.inFlight` adds outcomes not yet written. */
  let busy = 0

  let running = false
  let stopping: Promise<void> | undefined
  /** Claim statements sent and not yet answered. */
  let claimsInFlight = 0
  /** Slots promised to the claims in flight (their `limit`s), not yet filled or given back. */
  let reserved = 0
  /** The last claim came back full: more rows are probably due, so another claim may overlap it. */
  let backlog = false
  let claimWanted = false
  let flushing = false
  let claimErrors = 0
  let settleErrors = 0
  let pollTimer: ReturnType<typeof setTimeout> | undefined
  let retryTimer: ReturnType<typeof setTimeout> | undefined
  let settleTimer: ReturnType<typeof setTimeout> | undefined
  let smallClaimTimer: ReturnType<typeof setTimeout> | undefined
  /** The wait for half a batch of free slots is over: claim what is free. */
  let smallClaimDue = false
  let pumpQueued = false
  let subscription: WakeSubscription | undefined
  let idleWaiters: (() => void)[] = []
  let heartbeatTimer: ReturnType<typeof setInterval> | undefined
  let extending = false
  let listenLost = false

  function reportError(error: unknown, during: RelayEvents['error']['during']) {
    stats.errors++
    emitter.emit('error', { error, during })
  }

  function armPoll(delay = pollIntervalMs) {
    if (!running) return
    if (pollTimer) clearTimeout(pollTimer)
    // Not unref'd: a started relay keeps the process alive until `stop()`, like a server, even on
    // a backend that holds no socket (SQLite). Every other relay timer is unref'd.
    pollTimer = setTimeout(() => {
      pollTimer = undefined
      requestClaim()
    }, delay)
  }

  function requestClaim() {
    claimWanted = true
    pump()
  }

  /** Free slots: `concurrency` minus rows held, or (with `maxPendingOutcomes`) minus running handlers. */
  function freeSlots(): number {
    const free = concurrency - stats.inFlight
    if (maxPendingOutcomes === 0) return free
    return Math.min(concurrency - busy, free + maxPendingOutcomes)
  }

  function pump() {
    // Another claim while one is in flight only when the last came back full (a backlog) and
    // claims work; the slots reserved by the claims in flight bound how many overlap. Not for
    // ordered topics: only each key's head is claimable, the claim in flight holds them, and a
    // second claim would walk the whole backlog for heads that are not there.
    const overlap = backlog && claimErrors === 0 && !ordering
    while (running && claimWanted && (claimsInFlight === 0 || overlap)) {
      if (!claimOnce()) return
    }
  }

  /** Sends one claim if slots allow. Returns whether it did. */
  function claimOnce(): boolean {
    const free = freeSlots() - reserved
    if (free <= 0) return false
    if (free < minClaim && stats.inFlight + reserved > 0 && !smallClaimDue) {
      // Slots are busy and free up as handlers and settles finish: wait for half a batch of them
      // (one claim of many rows instead of many claims of one), but not for long.
      if (!smallClaimTimer) {
        smallClaimTimer = setTimeout(() => {
          smallClaimTimer = undefined
          smallClaimDue = true
          pump()
        }, SMALL_CLAIM_WAIT_MS)
        smallClaimTimer.unref?.()
      }
      return false
    }
    if (smallClaimTimer) {
      clearTimeout(smallClaimTimer)
      smallClaimTimer = undefined
    }
    smallClaimDue = false
    const limit = Math.min(free, batchSize)
    // With a backlog, the next claim may go out at once (the loop in `pump`); otherwise one at a time.
    claimWanted = backlog
    claimsInFlight++
    reserved += limit
    const sentAt = Date.now()
    if (pollTimer) {
      clearTimeout(pollTimer)
      pollTimer = undefined
    }
    const claimRequest = { table: outbox.table, topics, limit, leaseMs, maxAttempts, ordering }
    backend.claim(claimRequest).then(
      (rows) => {
        claimsInFlight--
        reserved -= limit
        if (claimErrors > 0)
          log.log(
            'info',
            { table: outbox.table.display },
            `claims work again after ${claimErrors} failure(s)`,
          )
        claimErrors = 0
        stats.claimed += rows.length
        if (emitter.has('claimed')) emitter.emit('claimed', { count: rows.length, limit })
        const leaseUntil = sentAt + leaseMs
        let batch: LeaseBatch | undefined
        for (const row of rows) {
          if (row.state === 'dead') onDeadAtClaim(row)
          else if (running) {
            batch ??= { remaining: 0 }
            dispatch(row, leaseUntil, batch)
          }
        }
        if (batch) armBatchLease(batch, leaseUntil)
        backlog = rows.length >= limit
        if (backlog) claimWanted = true
        if (claimWanted) pump()
        armPoll()
      },
      (error) => {
        claimsInFlight--
        reserved -= limit
        backlog = false
        claimErrors++
        reportError(error, 'claim')
        const exp = Math.min(CLAIM_BACKOFF_MAX_MS, CLAIM_BACKOFF_BASE_MS * 2 ** Math.min(claimErrors - 1, 20))
        claimWanted = false
        const retryInMs = Math.max(1, Math.round(exp / 2 + (Math.random() * exp) / 2))
        log.log(
          'warn',
          { table: outbox.table.display, err: error, failures: claimErrors, retryInMs },
          `claim failed; backing off ${retryInMs} ms`,
        )
        armPoll(retryInMs)
      },
    )
    return true
  }

  /** Runs `pump` once after the current burst of handler completions (maxPendingOutcomes > 0). */
  function schedulePump() {
    if (pumpQueued) return
    pumpQueued = true
    setImmediate(() => {
      pumpQueued = false
      pump()
    })
  }

  function onDeadAtClaim(row: ClaimedRow) {
    stats.deadLettered++
    emitter.emit('deadLettered', {
      id: row.id,
      topic: row.topic,
      attempts: row.attempts,
      reason: 'max-attempts',
      error: row.lastError ?? 'lease expired on the final attempt',
      settled: true,
    })
    // A dead head that does not block its key: the key's next message is claimable now.
    if (row.ordered && outbox.deadLetterContinues.has(row.topic)) claimWanted = true
  }

  /** The handler is done with its slot (it returned, or was abandoned). */
  function freeSlot(entry: InFlight) {
    if (!entry.busy) return
    entry.busy = false
    busy--
  }

  /** Stops watching the entry's lease (its outcome is known, or it was given up). */
  function unwatchLease(entry: InFlight) {
    if (entry.leaseTimer) {
      clearTimeout(entry.leaseTimer)
      entry.leaseTimer = undefined
    }
    const batch = entry.batch
    if (batch) {
      entry.batch = undefined
      if (--batch.remaining === 0 && batch.timer) {
        clearTimeout(batch.timer)
        batch.timer = undefined
      }
    }
  }

  /** The row is settled or given up: its slot is free. `thenPump: false` when releasing many at once. */
  function release(entry: InFlight, thenPump = true) {
    if (entry.done) return
    entry.done = true
    unwatchLease(entry)
    freeSlot(entry)
    entries.delete(entry)
    stats.inFlight--
    if (entries.size === 0 && settleQueue.length === 0) {
      const waiters = idleWaiters
      idleWaiters = []
      for (const w of waiters) w()
    }
    if (thenPump) pump()
  }

  function dispatch(row: ClaimedRow, leaseUntil: number, batch: LeaseBatch) {
    const entry: InFlight = {
      row,
      startedAt: Date.now(),
      leaseUntil,
      batch,
      busy: true,
      abandoned: false,
      settling: false,
      done: false,
    }
    batch.remaining++
    entries.add(entry)
    stats.inFlight++
    busy++
    deliver(entry)
  }

  function lapseReason(entry: InFlight): string {
    return heartbeatMs !== false && Date.now() - entry.startedAt >= maxHandlerMs
      ? `lease expired: the handler ran past maxHandlerMs (${maxHandlerMs} ms), so its lease was no longer extended`
      : 'lease expired while the handler was still running'
  }

  /** One timer for the rows of a claim: aborts the handlers still running when their shared lease lapses. */
  function armBatchLease(batch: LeaseBatch, leaseUntil: number) {
    if (batch.remaining === 0) return
    batch.timer = setTimeout(
      () => {
        batch.timer = undefined
        // Rare (a lapse): scan the rows held rather than keep every row of every batch alive.
        for (const entry of [...entries]) {
          if (entry.batch === batch && !entry.settling) abandon(entry, lapseReason(entry))
        }
      },
      Math.max(0, leaseUntil - Date.now()),
    )
    batch.timer.unref?.()
  }

  /** Aborts the handler when its (extended) lease really lapses: the heartbeat re-arms it on each extension. */
  function armLease(entry: InFlight) {
    unwatchLease(entry)
    entry.leaseTimer = setTimeout(
      () => abandon(entry, lapseReason(entry)),
      Math.max(0, entry.leaseUntil - Date.now()),
    )
    entry.leaseTimer.unref?.()
  }

  /**
   * The lease heartbeat: one fenced statement extends the lease of every running handler's
   * message that has used up half a heartbeat of it. A message whose extension did not apply was
   * claimed again or changed meanwhile (its lease had lapsed): its handler is aborted, as at a lapse.
   */
  function heartbeat() {
    if (extending || heartbeatMs === false || !backend.extendLease) return
    const sentAt = Date.now()
    const due = [...entries].filter(
      (e) =>
        !e.settling &&
        !e.abandoned &&
        sentAt + leaseMs - e.leaseUntil >= heartbeatMs / 2 &&
        // Past maxHandlerMs the lease is left to lapse: the lease timer then aborts the handler.
        sentAt - e.startedAt < maxHandlerMs,
    )
    if (due.length === 0) return
    extending = true
    backend
      .extendLease({
        table: outbox.table,
        leaseMs,
        rows: due.map((e) => ({ id: e.row.id, attempts: e.row.attempts })),
      })
      .then(
        (ids) => {
          const extended = new Set(ids)
          for (const e of due) {
            if (e.settling || e.abandoned || e.done) continue
            if (extended.has(e.row.id)) {
              e.leaseUntil = sentAt + leaseMs
              armLease(e)
            } else {
              abandon(e, 'its lease could not be extended (it lapsed and was claimed again, or it changed)')
            }
          }
        },
        // The lease timers still fire at the real lapse; the next beat tries again.
        (error) => {
          log.log(
            'warn',
            { table: outbox.table.display, err: error, messages: due.length },
            'extending leases failed; a handler whose lease lapses meanwhile is aborted',
          )
          reportError(error, 'lease')
        },
      )
      .finally(() => {
        extending = false
      })
  }

  function abandon(entry: InFlight, why: string) {
    if (entry.abandoned || entry.done) return
    entry.abandoned = true
    log.log(
      'warn',
      { table: outbox.table.display, id: entry.row.id, topic: entry.row.topic, attempts: entry.row.attempts },
      `handler aborted: ${why}; the message will be delivered again`,
    )
    const reason = new OutboxError('RELAY_STATE', `handler aborted: ${why}`, { source: 'relay' })
    if (entry.controller) entry.controller.abort(reason)
    else entry.abortReason = reason
    release(entry)
  }

  function deliver(entry: InFlight) {
    const { row } = entry
    let payload: unknown
    let headers: Record<string, string>
    try {
      payload = JSON.parse(row.payload)
      // Most messages carry no headers: share one frozen empty object instead of parsing '{}'.
      headers = row.headers === '{}' ? NO_HEADERS : JSON.parse(row.headers)
    } catch (err) {
      return dead(
        entry,
        undefined,
        'invalid-payload',
        `stored payload or headers are not valid JSON: ${errorText(err)}`,
      )
    }
    const schema = schemas?.[row.topic]
    if (schema) return void validateThenRun(entry, schema, payload, headers)
    run(entry, payload, headers)
  }

  async function validateThenRun(
    entry: InFlight,
    schema: StandardSchemaV1,
    payload: unknown,
    headers: Record<string, string>,
  ) {
    const { row } = entry
    let result = schema['~standard'].validate(payload)
    if (result instanceof Promise) {
      try {
        result = await result
      } catch (err) {
        return dead(entry, undefined, 'schema', `payload schema threw: ${errorText(err)}`)
      }
    }
    if (result.issues) {
      return dead(
        entry,
        undefined,
        'schema',
        `payload does not match the schema of topic ${JSON.stringify(row.topic)}: ${formatIssues(result.issues)}`,
      )
    }
    run(entry, result.value, headers)
  }

  /** Calls the handler; its outcome is queued when it returns or its promise settles. */
  function run(entry: InFlight, payload: unknown, headers: Record<string, string>) {
    const { row } = entry
    const message: DeliveredMessage = Object.freeze({
      id: row.id,
      topic: row.topic,
      key: row.key,
      payload,
      headers: headers === NO_HEADERS ? NO_HEADERS : Object.freeze(headers),
      attempts: row.attempts,
      createdAt: new Date(row.createdAtMs),
    })
    entry.message = message
    const handler = handlers.get(row.topic)!
    // An own, enumerable getter: `{ ...context }` and destructuring still see `signal`.
    const context: HandlerContext = {
      get signal() {
        return signalOf(entry)
      },
    }
    entry.startedAt = Date.now()
    let result: unknown
    try {
      // Without a registered tracer provider the span would be a no-op: call the handler directly.
      result = telemetry.tracesProcess()
        ? telemetry.process(message, () => handler(message, context))
        : handler(message, context)
    } catch (error) {
      return handlerFailed(entry, error)
    }
    if (result instanceof Promise) {
      result.then(
        () => handlerSucceeded(entry),
        (error: unknown) => handlerFailed(entry, error),
      )
    } else if (
      result !== null &&
      (typeof result === 'object' || typeof result === 'function') &&
      typeof (result as { then?: unknown }).then === 'function'
    ) {
      // Another thenable: adopt it the way `await` would.
      Promise.resolve(result).then(
        () => handlerSucceeded(entry),
        (error: unknown) => handlerFailed(entry, error),
      )
    } else {
      handlerSucceeded(entry)
    }
  }

  function handlerSucceeded(entry: InFlight) {
    if (entry.abandoned) return
    const { row } = entry
    enqueue({
      entry,
      settlement: { id: row.id, attempts: row.attempts, outcome: 'delivered' },
      message: entry.message,
      durationMs: Date.now() - entry.startedAt,
    })
  }

  function handlerFailed(entry: InFlight, error: unknown) {
    if (entry.abandoned) return
    failed(entry, entry.message!, error)
  }

  function failed(entry: InFlight, message: DeliveredMessage, error: unknown) {
    const text = errorText(error).slice(0, MAX_ERROR_TEXT)
    if (error instanceof Cancel) return dead(entry, message, 'cancel', text)
    if (message.attempts >= maxAttempts) {
      const why =
        error instanceof Retry ? `Retry requested on the final attempt (${maxAttempts}): ${text}` : text
      return dead(entry, message, 'max-attempts', why)
    }
    const delayMs =
      error instanceof Retry && error.delayMs !== undefined
        ? error.delayMs
        : backoffDelay(retry, message.attempts)
    enqueue({
      entry,
      settlement: { id: message.id, attempts: message.attempts, outcome: 'retry', delayMs, error: text },
      message,
      error,
    })
  }

  function dead(
    entry: InFlight,
    message: DeliveredMessage | undefined,
    reason: DeadLetterReason,
    error: string,
  ) {
    const { row } = entry
    enqueue({
      entry,
      settlement: {
        id: row.id,
        attempts: row.attempts,
        outcome: 'dead',
        error: error.slice(0, MAX_ERROR_TEXT),
      },
      message,
      reason,
      deadError: error,
    })
  }

  /** Counts and announces a written (or, `settled: false`, fenced-out) outcome. */
  function announce(p: PendingSettle, settled: boolean) {
    const { settlement, message } = p
    switch (settlement.outcome) {
      case 'delivered':
        stats.delivered++
        if (emitter.has('delivered'))
          emitter.emit('delivered', { message: message!, durationMs: p.durationMs!, settled })
        return
      case 'retry': {
        stats.retried++
        const { delayMs } = settlement
        if (emitter.has('retried'))
          emitter.emit('retried', { message: message!, error: p.error, delayMs, settled })
        if (settled && delayMs < pollIntervalMs && running) {
          if (retryTimer) clearTimeout(retryTimer)
          retryTimer = setTimeout(requestClaim, delayMs + 5)
          retryTimer.unref?.()
        }
        return
      }
      case 'dead': {
        stats.deadLettered++
        if (!emitter.has('deadLettered')) return
        const { row } = p.entry
        emitter.emit('deadLettered', {
          id: row.id,
          topic: row.topic,
          attempts: row.attempts,
          reason: p.reason!,
          error: p.deadError!,
          ...(message ? { message } : {}),
          settled,
        })
      }
    }
  }

  function enqueue(p: PendingSettle) {
    const { entry } = p
    entry.settling = true
    unwatchLease(entry)
    if (maxPendingOutcomes > 0) {
      // The handler is done: its slot runs the next message while the outcome waits for the settle.
      freeSlot(entry)
      schedulePump()
    }
    settleQueue.push(p)
    if (!flushing && !settleTimer) {
      flushing = true
      setImmediate(flush)
    }
  }

  function flush() {
    const batch = settleQueue
    settleQueue = []
    if (batch.length === 0) {
      flushing = false
      return
    }
    const settlements = new Array<Settlement>(batch.length)
    for (let i = 0; i < batch.length; i++) settlements[i] = batch[i]!.settlement
    backend
      .settle({ table: outbox.table, keepDelivered, settlements })
      .then(
        (applied) => {
          settleErrors = 0
          // A backend returns the ids it applied, a subset of those sent: as many means all of them.
          const ok = applied.length === batch.length ? undefined : new Set(applied)
          let headDone = false
          // Free every slot first, then claim once: one claim for the whole batch.
          for (const p of batch) release(p.entry, false)
          for (const p of batch) {
            announce(p, ok === undefined || ok.has(p.settlement.id))
            if (p.entry.row.ordered && p.settlement.outcome !== 'retry') headDone = true
          }
          // A settled head of an ordered key: the key's next message may be claimable now.
          if (headDone && running) claimWanted = true
          pump()
        },
        (error) => {
          settleErrors++
          reportError(error, 'settle')
          // Fencing makes a late settle harmless, so keep the outcomes and try again after a pause.
          settleQueue = batch.concat(settleQueue)
          const exp = Math.min(
            CLAIM_BACKOFF_MAX_MS,
            CLAIM_BACKOFF_BASE_MS * 2 ** Math.min(settleErrors - 1, 20),
          )
          log.log(
            'warn',
            {
              table: outbox.table.display,
              err: error,
              failures: settleErrors,
              retryInMs: exp,
              outcomes: batch.length,
            },
            `writing handler outcomes failed; retrying in ${exp} ms`,
          )
          settleTimer = setTimeout(() => {
            settleTimer = undefined
            if (!flushing) {
              flushing = true
              flush()
            }
          }, exp)
          settleTimer.unref?.()
        },
      )
      .finally(() => {
        if (settleTimer) {
          flushing = false
          return
        }
        if (settleQueue.length > 0) setImmediate(flush)
        else flushing = false
        if (entries.size === 0 && settleQueue.length === 0) {
          const waiters = idleWaiters
          idleWaiters = []
          for (const w of waiters) w()
        }
      })
  }

  function whenIdle(): Promise<void> {
    if (entries.size === 0 && settleQueue.length === 0 && !flushing) return Promise.resolve()
    return new Promise((resolve) => idleWaiters.push(resolve))
  }

  const relay: Relay = {
    get running() {
      return running
    },
    get stats() {
      return { ...stats }
    },
    on(event, listener) {
      return emitter.on(event, listener)
    },
    wake() {
      requestClaim()
    },
    async start() {
      if (stopping) await stopping
      if (running) return
      running = true
      if (heartbeatMs !== false && !heartbeatTimer) {
        heartbeatTimer = setInterval(heartbeat, heartbeatMs)
        heartbeatTimer.unref?.()
      }
      if (notify && backend.listen) {
        try {
          subscription = await backend.listen(outbox.channel, {
            onWake: requestClaim,
            onConnect: () => {
              if (listenLost)
                log.log('info', { table: outbox.table.display }, 'LISTEN connection re-established')
              listenLost = false
              requestClaim()
            },
            onError: (error) => {
              if (!listenLost)
                log.log(
                  'warn',
                  { table: outbox.table.display, err: error },
                  'LISTEN connection lost; reconnecting (wake-ups fall back to polling meanwhile)',
                )
              listenLost = true
              reportError(toOutboxError(error, backend.name, 'LISTEN connection'), 'listen')
            },
          })
        } catch (error) {
          log.log('warn', { table: outbox.table.display, err: error }, 'LISTEN failed; relying on polling')
          reportError(error, 'listen')
        }
        if (!running) {
          await subscription?.close().catch(() => {})
          subscription = undefined
          return
        }
      }
      requestClaim()
    },
    stop(stopOptions = {}) {
      if (stopping) return stopping
      const graceMs = stopOptions.graceMs ?? defaultGraceMs
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
      running = false
      for (const t of [pollTimer, retryTimer, smallClaimTimer]) if (t) clearTimeout(t)
      pollTimer = retryTimer = smallClaimTimer = undefined
      stopping = (async () => {
        const sub = subscription
        subscription = undefined
        await sub?.close().catch((error) => reportError(error, 'listen'))
        // Wait for handlers (and their settles) up to the grace, then abort stragglers.
        let graceTimer: ReturnType<typeof setTimeout> | undefined
        await Promise.race([whenIdle(), new Promise<void>((r) => (graceTimer = setTimeout(r, graceMs)))])
        if (graceTimer) clearTimeout(graceTimer)
        for (const entry of [...entries]) {
          if (!entry.settling) abandon(entry, 'the relay is stopping and the grace period ended')
        }
        if (heartbeatTimer) {
          clearInterval(heartbeatTimer)
          heartbeatTimer = undefined
        }
        // Give queued settles a last, bounded chance; anything left is re-delivered after its lease.
        if (settleQueue.length > 0 || flushing) {
          let lastTimer: ReturnType<typeof setTimeout> | undefined
          if (settleTimer) {
            clearTimeout(settleTimer)
            settleTimer = undefined
            flushing = true
            flush()
          }
          await Promise.race([
            whenIdle(),
            new Promise<void>((r) => (lastTimer = setTimeout(r, Math.max(1_000, graceMs)))),
          ])
          if (lastTimer) clearTimeout(lastTimer)
          if (settleTimer) clearTimeout(settleTimer)
        }
        const claimDeadline = Date.now() + Math.max(1_000, graceMs)
        while (claimsInFlight > 0 && Date.now() < claimDeadline) await new Promise((r) => setTimeout(r, 5))
        // Also when the relay never started: a connection-string backend opened by migrate() must
        // not keep the process alive. A backend never closes what it was given.
        await backend.close().catch((error) => reportError(error, 'settle'))
      })().finally(() => {
        stopping = undefined
      })
      return stopping
    },
  }
  return instrumentRelay(relay, {
    log,
    telemetry,
    startFields: { table: outbox.table.display, topics, concurrency, leaseMs, pollIntervalMs, notify },
  })
}
