// PROTOTYPE: a copy of packages/core/src/relay.ts with switchable performance changes (see
// `ProtoOptions`), to measure them side by side with core's relay. Not used by the product.
import {
  assertOutbox,
  backoffDelay,
  Cancel,
  type ClaimedRow,
  describe,
  formatIssues,
  type HandlerPayload,
  type Outbox,
  type OutboxBackend,
  OutboxError,
  type ResolvedRetryPolicy,
  Retry,
  type RetryPolicy,
  resolveRetryPolicy,
  type Settlement,
  type StandardSchemaV1,
  type TopicName,
  toOutboxError,
  type WakeSubscription,
} from '@outboxkit/core'
// The prototype varies the relay loop only; the emitter is core's own.
import { TypedEmitter } from '../../../packages/core/src/emitter.js'

/** The prototype's switches. */
export interface ProtoOptions {
  /**
   * Claim only when at least this fraction of min(concurrency, batchSize) slots is free (or
   * nothing is in flight), instead of claiming as soon as one slot frees: fewer, fuller claims.
   */
  minClaimFraction?: number
  /** Free a handler's slot when the handler returns, not after its settle round trip. */
  releaseOnHandlerEnd?: boolean
  /** Most outcomes waiting for or inside a settle statement when `releaseOnHandlerEnd` (default 2 × batchSize). */
  maxPendingSettles?: number
  /** Create the AbortController only when a handler reads `signal`. */
  lazySignal?: boolean
  /** One lease timer per claimed batch instead of one per message. */
  batchLeaseTimer?: boolean
  /** Claims in flight at once while claims come back full (a backlog). Default 1 (core). */
  parallelClaims?: number
  /** Extra settle statements in flight at once when a full batch of outcomes is queued. Default 1 (core). */
  parallelSettles?: number
  /**
   * Adaptive wake (see prototypes/wake.ts): while claims find rows, mark the channel hot (publish
   * then skips pg_notify) and poll every `pollMs`; `hotMs` after the last non-empty claim (plus a
   * grace of `graceMs` for transactions that published while hot and commit later), fall back
   * to LISTEN and `pollIntervalMs`.
   */
  adaptiveWake?: {
    hotMs: number
    pollMs: number
    markEveryMs: number
    graceMs: number
    mark: (ms: number) => Promise<void>
  }
}

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
   * message's lease expires while the handler still runs (another relay may then reclaim it).
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
  /** Most handlers running at once; the relay never claims more rows than free slots. Default 50. */
  concurrency?: number
  /** Most rows per claim statement. Default 100. */
  batchSize?: number
  /** Poll interval when idle, in ms. Polling is the source of truth. Default 1 500. */
  pollIntervalMs?: number
  /** How long a claimed row stays invisible to other claims, in ms. Default 30 000. */
  leaseMs?: number
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
  /** Prototype switches. */
  proto?: ProtoOptions
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
  error: { error: unknown; during: 'claim' | 'settle' | 'listen' | 'listener' }
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
  controller?: AbortController
  abortReason?: unknown
  /** The handler's concurrency slot was already given back. */
  slotFreed?: boolean
  batch?: { remaining: number; timer?: ReturnType<typeof setTimeout> }
  message?: DeliveredMessage
  startedAt: number
  leaseTimer?: ReturnType<typeof setTimeout>
  /** Given up (lease expired or stop): never settled, slot already released. */
  abandoned: boolean
  /** The handler finished and its outcome is queued or being written: never abort it. */
  settling: boolean
  done: boolean
}

interface PendingSettle {
  readonly entry: InFlight
  readonly settlement: Settlement
  readonly emit: (settled: boolean) => void
}

function positiveInt(name: string, value: unknown, fallback: number): number {
  const v = value ?? fallback
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
    throw new OutboxError('INVALID_CONFIG', `${name} must be an integer >= 1, got ${describe(v)}.`, {
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
      `${name} must be a finite number of milliseconds > 0, got ${describe(v)}.`,
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
      `createRelay expects an options object, got ${describe(options)}.`,
      { source: 'relay' },
    )
  }
  const backend = options.backend
  if (!backend || typeof backend.claim !== 'function' || typeof backend.settle !== 'function') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `backend must be an OutboxBackend (e.g. pgBackend(...)), got ${describe(backend)}.`,
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
        `handlers[${JSON.stringify(topic)}] must be a function, got ${describe(handler)}.`,
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
  const concurrency = positiveInt('concurrency', options.concurrency, 50)
  const batchSize = positiveInt('batchSize', options.batchSize, 100)
  const maxAttempts = positiveInt('maxAttempts', options.maxAttempts, 10)
  const pollIntervalMs = positiveMs('pollIntervalMs', options.pollIntervalMs, 1_500)
  const leaseMs = positiveMs('leaseMs', options.leaseMs, 30_000)
  const defaultGraceMs =
    options.graceMs === undefined ? 10_000 : positiveMs('graceMs', options.graceMs, 10_000)
  const retry: ResolvedRetryPolicy = resolveRetryPolicy(options.retry)
  const notify = options.notify ?? true
  const keepDelivered = options.keepDelivered ?? false
  const proto = options.proto ?? {}
  const maxPendingSettles = proto.maxPendingSettles ?? 2 * batchSize
  /** Handlers running (slots taken). Equals stats.inFlight unless `releaseOnHandlerEnd`. */
  let busy = 0
  /** Rows asked for by claims in flight. */
  let reserved = 0
  let claimsInFlight = 0
  let backlog = false
  let extraSettles = 0
  const maxClaims = proto.parallelClaims ?? 1
  const adaptive = proto.adaptiveWake
  let lastMarkAt = Number.NEGATIVE_INFINITY
  let hotUntil = Number.NEGATIVE_INFINITY
  const schemas = (outbox.topics ?? undefined) as Record<string, StandardSchemaV1> | undefined

  const stats: RelayStats = { claimed: 0, delivered: 0, retried: 0, deadLettered: 0, errors: 0, inFlight: 0 }
  const emitter = new TypedEmitter<RelayEvents>((error) => reportError(error, 'listener'))
  const entries = new Set<InFlight>()
  let settleQueue: PendingSettle[] = []

  let running = false
  let stopping: Promise<void> | undefined
  let claiming = false
  let claimWanted = false
  let flushing = false
  let claimErrors = 0
  let settleErrors = 0
  let pollTimer: ReturnType<typeof setTimeout> | undefined
  let retryTimer: ReturnType<typeof setTimeout> | undefined
  let settleTimer: ReturnType<typeof setTimeout> | undefined
  let subscription: WakeSubscription | undefined
  let idleWaiters: (() => void)[] = []

  function reportError(error: unknown, during: RelayEvents['error']['during']) {
    stats.errors++
    emitter.emit('error', { error, during })
  }

  function armPoll(delay = pollIntervalMs) {
    if (!running) return
    if (adaptive && delay === pollIntervalMs && Date.now() < hotUntil + adaptive.graceMs)
      delay = adaptive.pollMs
    if (pollTimer) clearTimeout(pollTimer)
    pollTimer = setTimeout(() => {
      pollTimer = undefined
      requestClaim()
    }, delay)
    pollTimer.unref?.()
  }

  function requestClaim() {
    claimWanted = true
    pump()
  }

  function pump() {
    while (running && claimWanted && claimsInFlight < maxClaims) {
      if (!claimOne()) return
    }
  }

  function claimOne(): boolean {
    const free = concurrency - busy - reserved
    if (free <= 0) return false
    if (proto.releaseOnHandlerEnd && stats.inFlight - busy >= maxPendingSettles) return false
    if (proto.minClaimFraction && busy + reserved > 0) {
      const threshold = Math.max(1, Math.ceil(Math.min(concurrency, batchSize) * proto.minClaimFraction))
      if (free < threshold) return false
    }
    claimsInFlight++
    claiming = true
    const limit = Math.min(free, batchSize)
    reserved += limit
    claimWanted = backlog && claimsInFlight < maxClaims
    const sentAt = Date.now()
    if (pollTimer) {
      clearTimeout(pollTimer)
      pollTimer = undefined
    }
    backend.claim({ table: outbox.table, topics, limit, leaseMs, maxAttempts }).then(
      (rows) => {
        claimsInFlight--
        reserved -= limit
        claiming = claimsInFlight > 0
        claimErrors = 0
        backlog = rows.length >= limit
        if (adaptive && rows.length > 0) {
          const now = Date.now()
          if (now - lastMarkAt >= adaptive.markEveryMs) {
            lastMarkAt = now
            hotUntil = now + adaptive.hotMs
            adaptive.mark(adaptive.hotMs).catch((error) => reportError(error, 'claim'))
          }
        }
        stats.claimed += rows.length
        if (emitter.has('claimed')) emitter.emit('claimed', { count: rows.length, limit })
        const leaseLeft = leaseMs - (Date.now() - sentAt)
        let batch: InFlight['batch']
        const batchEntries: InFlight[] = []
        if (proto.batchLeaseTimer && rows.length > 0) batch = { remaining: 0 }
        for (const row of rows) {
          if (row.state === 'dead') onDeadAtClaim(row)
          else if (running) {
            const e = dispatch(row, leaseLeft, batch)
            if (batch) batchEntries.push(e)
          }
        }
        if (batch && batch.remaining > 0) {
          batch.timer = setTimeout(
            () => {
              for (const e of batchEntries) {
                if (!e.settling) abandon(e, 'lease expired while the handler was still running')
              }
            },
            Math.max(0, leaseLeft),
          )
          batch.timer.unref?.()
        }
        if (rows.length >= limit) claimWanted = true
        if (claimWanted) pump()
        armPoll()
      },
      (error) => {
        claimsInFlight--
        reserved -= limit
        claiming = claimsInFlight > 0
        backlog = false
        claimErrors++
        reportError(error, 'claim')
        const exp = Math.min(CLAIM_BACKOFF_MAX_MS, CLAIM_BACKOFF_BASE_MS * 2 ** Math.min(claimErrors - 1, 20))
        claimWanted = false
        armPoll(Math.max(1, Math.round(exp / 2 + (Math.random() * exp) / 2)))
      },
    )
    return true
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
  }

  function release(entry: InFlight) {
    if (entry.done) return
    entry.done = true
    if (entry.leaseTimer) clearTimeout(entry.leaseTimer)
    if (entry.batch && --entry.batch.remaining === 0 && entry.batch.timer) clearTimeout(entry.batch.timer)
    entries.delete(entry)
    stats.inFlight--
    if (!entry.slotFreed) {
      entry.slotFreed = true
      busy--
    }
    if (entries.size === 0 && settleQueue.length === 0) {
      const waiters = idleWaiters
      idleWaiters = []
      for (const w of waiters) w()
    }
    pump()
  }

  function dispatch(row: ClaimedRow, leaseLeftMs: number, batch?: InFlight['batch']): InFlight {
    const entry: InFlight = {
      row,
      ...(proto.lazySignal ? {} : { controller: new AbortController() }),
      startedAt: Date.now(),
      abandoned: false,
      settling: false,
      done: false,
    }
    entries.add(entry)
    stats.inFlight++
    busy++
    if (batch) {
      entry.batch = batch
      batch.remaining++
    } else {
      entry.leaseTimer = setTimeout(
        () => abandon(entry, 'lease expired while the handler was still running'),
        Math.max(0, leaseLeftMs),
      )
      entry.leaseTimer.unref?.()
    }
    void deliver(entry)
    return entry
  }

  function signalOf(entry: InFlight): AbortSignal {
    if (!entry.controller) {
      entry.controller = new AbortController()
      if (entry.abortReason !== undefined) entry.controller.abort(entry.abortReason)
    }
    return entry.controller.signal
  }

  function abandon(entry: InFlight, why: string) {
    if (entry.abandoned || entry.done) return
    entry.abandoned = true
    const reason = new OutboxError('RELAY_STATE', `handler aborted: ${why}`, { source: 'relay' })
    if (entry.controller) entry.controller.abort(reason)
    else entry.abortReason = reason
    release(entry)
  }

  async function deliver(entry: InFlight) {
    const { row } = entry
    let payload: unknown
    let headers: Record<string, string>
    try {
      payload = JSON.parse(row.payload)
      headers = JSON.parse(row.headers)
    } catch (err) {
      return dead(entry, 'invalid-payload', `stored payload or headers are not valid JSON: ${errorText(err)}`)
    }
    const schema = schemas?.[row.topic]
    if (schema) {
      let result = schema['~standard'].validate(payload)
      if (result instanceof Promise) {
        try {
          result = await result
        } catch (err) {
          return dead(entry, 'schema', `payload schema threw: ${errorText(err)}`)
        }
      }
      if (result.issues) {
        return dead(
          entry,
          'schema',
          `payload does not match the schema of topic ${JSON.stringify(row.topic)}: ${formatIssues(result.issues)}`,
        )
      }
      payload = result.value
    }
    const message: DeliveredMessage = Object.freeze({
      id: row.id,
      topic: row.topic,
      key: row.key,
      payload,
      headers: Object.freeze(headers),
      attempts: row.attempts,
      createdAt: new Date(row.createdAtMs),
    })
    entry.message = message
    const handler = handlers.get(row.topic)!
    entry.startedAt = Date.now()
    try {
      await handler(
        message,
        proto.lazySignal
          ? {
              get signal() {
                return signalOf(entry)
              },
            }
          : { signal: entry.controller!.signal },
      )
    } catch (error) {
      if (entry.abandoned) return
      return failed(entry, message, error)
    }
    if (entry.abandoned) return
    const durationMs = Date.now() - entry.startedAt
    enqueue(entry, { id: row.id, attempts: row.attempts, outcome: 'delivered' }, (settled) => {
      stats.delivered++
      emitter.emit('delivered', { message, durationMs, settled })
    })
  }

  function failed(entry: InFlight, message: DeliveredMessage, error: unknown) {
    const text = errorText(error).slice(0, MAX_ERROR_TEXT)
    if (error instanceof Cancel) return dead(entry, 'cancel', text)
    if (message.attempts >= maxAttempts) {
      const why =
        error instanceof Retry ? `Retry requested on the final attempt (${maxAttempts}): ${text}` : text
      return dead(entry, 'max-attempts', why)
    }
    const delayMs =
      error instanceof Retry && error.delayMs !== undefined
        ? error.delayMs
        : backoffDelay(retry, message.attempts)
    enqueue(
      entry,
      { id: message.id, attempts: message.attempts, outcome: 'retry', delayMs, error: text },
      (settled) => {
        stats.retried++
        emitter.emit('retried', { message, error, delayMs, settled })
        if (settled && delayMs < pollIntervalMs && running) {
          if (retryTimer) clearTimeout(retryTimer)
          retryTimer = setTimeout(requestClaim, delayMs + 5)
          retryTimer.unref?.()
        }
      },
    )
  }

  function dead(entry: InFlight, reason: DeadLetterReason, error: string) {
    const { row } = entry
    enqueue(
      entry,
      { id: row.id, attempts: row.attempts, outcome: 'dead', error: error.slice(0, MAX_ERROR_TEXT) },
      (settled) => {
        stats.deadLettered++
        emitter.emit('deadLettered', {
          id: row.id,
          topic: row.topic,
          attempts: row.attempts,
          reason,
          error,
          ...(entry.message ? { message: entry.message } : {}),
          settled,
        })
      },
    )
  }

  function enqueue(entry: InFlight, settlement: Settlement, emit: (settled: boolean) => void) {
    entry.settling = true
    if (entry.leaseTimer) {
      clearTimeout(entry.leaseTimer)
      entry.leaseTimer = undefined
    }
    if (proto.releaseOnHandlerEnd && !entry.slotFreed) {
      entry.slotFreed = true
      busy--
      queueMicrotask(pump)
    }
    settleQueue.push({ entry, settlement, emit })
    if (!flushing && !settleTimer) {
      flushing = true
      setImmediate(flush)
    } else if (
      flushing &&
      !settleTimer &&
      extraSettles < (proto.parallelSettles ?? 1) - 1 &&
      settleQueue.length >= Math.min(batchSize, concurrency)
    ) {
      extraFlush()
    }
  }

  /** A second settle statement alongside the main flush chain (prototype `parallelSettles`). */
  function extraFlush() {
    const batch = settleQueue
    settleQueue = []
    extraSettles++
    backend
      .settle({ table: outbox.table, keepDelivered, settlements: batch.map((p) => p.settlement) })
      .then(
        (applied) => {
          const ok = new Set(applied)
          for (const p of batch) {
            release(p.entry)
            p.emit(ok.has(p.settlement.id))
          }
        },
        (error) => {
          reportError(error, 'settle')
          settleQueue = batch.concat(settleQueue)
        },
      )
      .finally(() => {
        extraSettles--
        if (settleQueue.length > 0 && !flushing && !settleTimer) {
          flushing = true
          setImmediate(flush)
        }
      })
  }

  function flush() {
    const batch = settleQueue
    settleQueue = []
    if (batch.length === 0) {
      flushing = false
      return
    }
    backend
      .settle({ table: outbox.table, keepDelivered, settlements: batch.map((p) => p.settlement) })
      .then(
        (applied) => {
          settleErrors = 0
          const ok = new Set(applied)
          for (const p of batch) {
            release(p.entry)
            p.emit(ok.has(p.settlement.id))
          }
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
    if (entries.size === 0 && settleQueue.length === 0 && !flushing && extraSettles === 0)
      return Promise.resolve()
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
      if (notify && backend.listen) {
        try {
          subscription = await backend.listen(outbox.channel, {
            onWake: requestClaim,
            onConnect: requestClaim,
            onError: (error) =>
              reportError(toOutboxError(error, backend.name, 'LISTEN connection'), 'listen'),
          })
        } catch (error) {
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
          new OutboxError('INVALID_CONFIG', `stop graceMs must be a number >= 0, got ${describe(graceMs)}.`, {
            source: 'relay',
          }),
        )
      }
      running = false
      for (const t of [pollTimer, retryTimer]) if (t) clearTimeout(t)
      pollTimer = retryTimer = undefined
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
        while (claiming && Date.now() < claimDeadline) await new Promise((r) => setTimeout(r, 5))
        // Also when the relay never started: a connection-string backend opened by migrate() must
        // not keep the process alive. A backend never closes what it was given.
        await backend.close().catch((error) => reportError(error, 'settle'))
      })().finally(() => {
        stopping = undefined
      })
      return stopping
    },
  }
  return relay
}
