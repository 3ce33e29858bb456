import { summarizeStats } from './admin-queries.js'
import type { OutboxBackend } from './backend.js'
import { describe, type Outbox } from './define-outbox.js'
import { OutboxError } from './errors.js'
import type { SafeLogger } from './logger.js'
import type { PreparedMessage, PublishResult } from './message.js'
import { loadOtel, type OtelApi, otelNow } from './otel.js'
import type { DeliveredMessage, Relay } from './relay.js'
import { Cancel } from './retry.js'
import { formatTraceparent, headerValue, parseTraceparent, withTraceHeaders } from './trace-context.js'

/** The instrumentation scope of outboxkit's spans and metrics. */
export const INSTRUMENTATION_SCOPE = '@outboxkit/core'

/**
 * The names of the metrics outboxkit records through `@opentelemetry/api` (Prometheus exporters
 * turn dots into `_` and add the unit, e.g. `outboxkit_handler_duration_seconds`).
 */
export const metricNames = {
  /** Counter: messages written by `publish`/`publishMany` (not dedup no-ops). By topic. */
  published: 'outboxkit.messages.published',
  /** Counter: handler successes. By topic. */
  delivered: 'outboxkit.messages.delivered',
  /** Counter: handler failures that were rescheduled. By topic. */
  retried: 'outboxkit.messages.retried',
  /** Counter: dead letters. By topic and reason. */
  deadLettered: 'outboxkit.messages.dead_lettered',
  /** Histogram, seconds: handler run time. By topic. */
  handlerDuration: 'outboxkit.handler.duration',
  /** Histogram, seconds: end-to-end delay from `created_at` to a successful delivery. By topic. */
  deliveryDelay: 'outboxkit.delivery.delay',
  /** Gauge: rows by topic and state (pending, processing, dead; delivered with keepDelivered). */
  queueDepth: 'outboxkit.queue.depth',
  /** Gauge, seconds: age of the oldest pending or processing message (0 when none). */
  oldestPendingAge: 'outboxkit.queue.oldest_pending.age',
  /** Gauge, seconds: how late the oldest due message is (0 when none is due). */
  oldestDueLag: 'outboxkit.queue.oldest_due.lag',
} as const

/** Telemetry options of a relay (the `telemetry` option of `createRelay`). */
export interface RelayTelemetryOptions {
  /** Spans and metrics through `@opentelemetry/api`, when it is installed. Default `true`. */
  enabled?: boolean
  /**
   * Register the queue gauges (depth by topic and state, oldest pending age, oldest due lag),
   * read with one `stats` statement per collection at most every `statsIntervalMs`. Default `true`.
   */
  queueGauges?: boolean
  /** Shortest time between two stats statements, in ms; collections in between reuse the last read. Default 15 000. */
  statsIntervalMs?: number
}

const SYSTEM = 'outboxkit'
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
const DELAY_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400]

type Api = OtelApi
type Instruments = ReturnType<typeof createInstruments>

function createInstruments(provider: ReturnType<Api['metrics']['getMeterProvider']>) {
  const meter = provider.getMeter(INSTRUMENTATION_SCOPE)
  const unit = { unit: '{message}' }
  return {
    meter,
    published: meter.createCounter(metricNames.published, {
      ...unit,
      description: 'Messages written to the outbox',
    }),
    delivered: meter.createCounter(metricNames.delivered, {
      ...unit,
      description: 'Messages whose handler succeeded',
    }),
    retried: meter.createCounter(metricNames.retried, {
      ...unit,
      description: 'Handler failures rescheduled',
    }),
    deadLettered: meter.createCounter(metricNames.deadLettered, {
      ...unit,
      description: 'Messages dead-lettered',
    }),
    handlerDuration: meter.createHistogram(metricNames.handlerDuration, {
      unit: 's',
      description: 'Handler run time',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    }),
    deliveryDelay: meter.createHistogram(metricNames.deliveryDelay, {
      unit: 's',
      description: 'Time from publish (created_at) to successful delivery',
      advice: { explicitBucketBoundaries: DELAY_BUCKETS },
    }),
    queueDepth: meter.createObservableGauge(metricNames.queueDepth, {
      ...unit,
      description: 'Outbox rows by topic and state',
    }),
    oldestPendingAge: meter.createObservableGauge(metricNames.oldestPendingAge, {
      unit: 's',
      description: 'Age of the oldest message not yet delivered',
    }),
    oldestDueLag: meter.createObservableGauge(metricNames.oldestDueLag, {
      unit: 's',
      description: 'How late the oldest due message is',
    }),
  }
}

let cached: { provider: unknown; instruments: Instruments; live: boolean } | undefined

/** The instruments of the current global meter provider (re-created when the provider changes). */
function instruments(api: Api): Instruments {
  const provider = api.metrics.getMeterProvider()
  if (cached?.provider !== provider) {
    const made = createInstruments(provider)
    // No meter provider registered: the API hands out its no-op meter, recording is wasted work.
    const live = !(made.meter instanceof (api.createNoopMeter().constructor as new () => unknown))
    cached = { provider, instruments: made, live }
  }
  return cached.instruments
}

/** The instruments, or `undefined` when no meter provider is registered (only the API's no-op one). */
function liveInstruments(api: Api): Instruments | undefined {
  const m = instruments(api)
  return cached!.live ? m : undefined
}

let noopTracerProvider: unknown
/**
 * True when the application registered a tracer provider. Without one the API's tracer is a no-op:
 * the relay then skips its span work (and `context.with`) per message altogether.
 */
function tracerRegistered(api: Api): boolean {
  const provider = api.trace.getTracerProvider() as { getDelegate?: () => unknown }
  noopTracerProvider ??= new api.ProxyTracerProvider().getDelegate()
  const delegate = typeof provider.getDelegate === 'function' ? provider.getDelegate() : provider
  return delegate !== noopTracerProvider
}

function exceptionOf(error: unknown): Error | string {
  if (error instanceof Error) return error
  try {
    return String(error)
  } catch {
    return 'non-Error thrown'
  }
}

function markFailed(
  api: Api,
  span: ReturnType<ReturnType<Api['trace']['getTracer']>['startSpan']>,
  error: unknown,
) {
  span.recordException(exceptionOf(error))
  span.setStatus({
    code: api.SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  })
  span.setAttribute(
    'error.type',
    error instanceof Error ? (error as { code?: unknown }).code?.toString() || error.name : typeof error,
  )
}

/**
 * Runs `write` inside a PRODUCER span (`send <topic>`) and writes the span's W3C `traceparent` and
 * `tracestate` into every message's headers, unless the publisher set them. Counts the messages
 * written. Without `@opentelemetry/api` it only calls `write`.
 */
export async function tracePublish(
  outbox: Outbox,
  messages: PreparedMessage[],
  write: (messages: PreparedMessage[]) => Promise<PublishResult[]>,
): Promise<PublishResult[]> {
  let api = otelNow()
  if (api === undefined) api = await loadOtel()
  if (!api) return write(messages)
  const { span, parent, traced } = startPublishSpan(api, outbox, messages)
  try {
    const results = await api.context.with(api.trace.setSpan(parent, span), () => write(traced))
    countPublished(api, span, outbox, messages, results)
    return results
  } catch (error) {
    markFailed(api, span, error)
    throw error
  } finally {
    span.end()
  }
}

/**
 * {@link tracePublish} for drivers whose transactions are synchronous (better-sqlite3): `write` is
 * called before this function returns, inside the PRODUCER span, and may return its results
 * directly or as a Promise (the span then ends when it settles). Nothing is awaited before the
 * write, so until `@opentelemetry/api` has been loaded (this call starts loading it; a relay's
 * start does too) publishes are written untraced.
 */
export function tracePublishSync<R extends PublishResult[] | Promise<PublishResult[]>>(
  outbox: Outbox,
  messages: PreparedMessage[],
  write: (messages: PreparedMessage[]) => R,
): R {
  const api = otelNow()
  if (api === undefined) void loadOtel()
  if (!api) return write(messages)
  const { span, parent, traced } = startPublishSpan(api, outbox, messages)
  const fail = (error: unknown) => {
    markFailed(api, span, error)
    span.end()
    return error
  }
  let written: R
  try {
    written = api.context.with(api.trace.setSpan(parent, span), () => write(traced))
  } catch (error) {
    throw fail(error)
  }
  const done = (results: PublishResult[]) => {
    countPublished(api, span, outbox, messages, results)
    span.end()
    return results
  }
  if (written instanceof Promise) {
    return written.then(done, (error: unknown) => {
      throw fail(error)
    }) as R
  }
  return done(written as PublishResult[]) as R
}

/** Starts the PRODUCER span of a publish and puts its trace context into the messages' headers. */
function startPublishSpan(api: Api, outbox: Outbox, messages: PreparedMessage[]) {
  const first = messages[0]!
  const single = messages.length === 1 || messages.every((m) => m.topic === first.topic)
  const attributes: Record<string, string | number> = {
    'messaging.system': SYSTEM,
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'send',
    'outboxkit.table': outbox.table.display,
  }
  if (single) attributes['messaging.destination.name'] = first.topic
  if (messages.length === 1) attributes['messaging.message.id'] = first.id
  else attributes['messaging.batch.message_count'] = messages.length
  const parent = api.context.active()
  const span = api.trace
    .getTracer(INSTRUMENTATION_SCOPE)
    .startSpan(single ? `send ${first.topic}` : 'send', { kind: api.SpanKind.PRODUCER, attributes }, parent)
  let traced = messages
  const sc = span.spanContext()
  if (api.trace.isSpanContextValid(sc)) {
    const tracestate = sc.traceState?.serialize()
    const trace = {
      traceparent: formatTraceparent(sc.traceId, sc.spanId, sc.traceFlags),
      ...(tracestate ? { tracestate } : {}),
    }
    traced = messages.map((m) => withTraceHeaders(m, trace))
  }
  return { span, parent, traced }
}

/** Records the outcome of a publish on its span and counts the messages written. */
function countPublished(
  api: Api,
  span: ReturnType<ReturnType<Api['trace']['getTracer']>['startSpan']>,
  outbox: Outbox,
  messages: readonly PreparedMessage[],
  results: readonly PublishResult[],
) {
  if (messages.length === 1) span.setAttribute('outboxkit.published', results[0]?.published === true)
  const { published } = instruments(api)
  for (let i = 0; i < results.length; i++) {
    if (!results[i]!.published) continue
    published.add(1, {
      'messaging.system': SYSTEM,
      'messaging.destination.name': messages[i]!.topic,
      'outboxkit.table': outbox.table.display,
    })
  }
}

/** What a relay asks of its telemetry. Internal to core. */
export interface RelayTelemetry {
  /** Runs the handler call `run` inside a CONSUMER span (`process <topic>`) whose parent is the message's trace context. */
  process(message: DeliveredMessage, run: () => unknown): Promise<unknown>
  /**
   * Whether {@link RelayTelemetry.process} would record a span now (telemetry on, the API
   * installed, a tracer provider registered). When false the relay calls the handler directly.
   */
  tracesProcess(): boolean
  /** Subscribes the metric counters to the relay's events. */
  attach(relay: Relay): void
  /** Loads the API when enabled (before the relay starts, so its first deliveries are traced). */
  prepare(): Promise<void>
  /** Registers the queue gauges (once the relay runs). */
  started(): Promise<void>
  /** Unregisters the queue gauges. */
  stopped(): void
}

/** What {@link createRelayTelemetry} needs from the relay. */
export interface RelayTelemetryContext {
  readonly outbox: Outbox
  readonly backend: OutboxBackend
  readonly topics: readonly string[]
  readonly maxAttempts: number
  readonly keepDelivered: boolean
  readonly log: SafeLogger
}

function positive(name: string, value: unknown, fallback: number): number {
  const v = value ?? fallback
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `telemetry.${name} must be a finite number of milliseconds > 0, got ${describe(v)}.`,
      { source: 'relay' },
    )
  }
  return v
}

/**
 * Validates the relay's `telemetry` option and builds its hooks. Everything is a no-op when the
 * option is `false` or `@opentelemetry/api` is not installed.
 *
 * @throws OutboxError `INVALID_CONFIG` for an invalid option.
 */
export function createRelayTelemetry(
  option: boolean | RelayTelemetryOptions | undefined,
  ctx: RelayTelemetryContext,
): RelayTelemetry {
  if (
    option !== undefined &&
    typeof option !== 'boolean' &&
    (option === null || typeof option !== 'object')
  ) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `telemetry must be true, false or { enabled, queueGauges, statsIntervalMs }, got ${describe(option)}.`,
      { source: 'relay' },
    )
  }
  const opts: RelayTelemetryOptions = typeof option === 'object' ? option : { enabled: option ?? true }
  const enabled = opts.enabled !== false
  const gaugesWanted = enabled && opts.queueGauges !== false
  const statsIntervalMs = positive('statsIntervalMs', opts.statsIntervalMs, 15_000)
  const { outbox, backend, log } = ctx
  const table = outbox.table.display
  const base = { 'messaging.system': SYSTEM, 'outboxkit.table': table }
  const attrs = (topic: string) => ({ ...base, 'messaging.destination.name': topic })
  if (enabled) void loadOtel()

  const api = (): Api | null => (enabled ? (otelNow() ?? null) : null)

  // Queue gauges: one stats statement per collection at most every statsIntervalMs.
  let last: { at: number; value: ReturnType<typeof summarizeStats> } | undefined
  let reading: Promise<ReturnType<typeof summarizeStats> | undefined> | undefined
  function readStats(): Promise<ReturnType<typeof summarizeStats> | undefined> {
    if (last && Date.now() - last.at < statsIntervalMs) return Promise.resolve(last.value)
    reading ??= backend.stats!({ table: outbox.table, includeDelivered: ctx.keepDelivered })
      .then(
        (rows) => {
          last = { at: Date.now(), value: summarizeStats(rows, ctx.keepDelivered) }
          return last.value
        },
        (error) => {
          log.log(
            'warn',
            { err: error, table },
            'queue gauges: the stats query failed; no queue gauges this time',
          )
          return undefined
        },
      )
      .finally(() => {
        reading = undefined
      })
    return reading
  }
  let gauges: { meter: Instruments['meter']; observables: unknown[]; callback: unknown } | undefined

  const telemetry: RelayTelemetry = {
    tracesProcess() {
      const a = api()
      return a !== null && tracerRegistered(a)
    },

    async process(message, run) {
      const a = api()
      if (!a || !tracerRegistered(a)) return run()
      const headers = message.headers
      const remote = parseTraceparent(headerValue(headers, 'traceparent'))
      let parent = a.ROOT_CONTEXT
      if (remote) {
        const tracestate = headerValue(headers, 'tracestate')
        parent = a.trace.setSpanContext(a.ROOT_CONTEXT, {
          ...remote,
          isRemote: true,
          ...(tracestate ? { traceState: a.createTraceState(tracestate) } : {}),
        })
      }
      const span = a.trace.getTracer(INSTRUMENTATION_SCOPE).startSpan(
        `process ${message.topic}`,
        {
          kind: a.SpanKind.CONSUMER,
          attributes: {
            ...attrs(message.topic),
            'messaging.operation.type': 'process',
            'messaging.operation.name': 'process',
            'messaging.message.id': message.id,
            'outboxkit.message.attempt': message.attempts,
          },
        },
        parent,
      )
      try {
        const result = await a.context.with(a.trace.setSpan(parent, span), run)
        span.setAttribute('outboxkit.outcome', 'delivered')
        return result
      } catch (error) {
        const dead = error instanceof Cancel || message.attempts >= ctx.maxAttempts
        span.setAttribute('outboxkit.outcome', dead ? 'dead' : 'retry')
        markFailed(a, span, error)
        throw error
      } finally {
        span.end()
      }
    },

    attach(relay) {
      if (!enabled) return
      relay.on('delivered', ({ message, durationMs }) => {
        const a = api()
        const m = a && liveInstruments(a)
        if (!m) return
        const at = attrs(message.topic)
        m.delivered.add(1, at)
        m.handlerDuration.record(durationMs / 1000, at)
        m.deliveryDelay.record(Math.max(0, Date.now() - message.createdAt.getTime()) / 1000, at)
      })
      relay.on('retried', ({ message }) => {
        const a = api()
        const m = a && liveInstruments(a)
        if (m) m.retried.add(1, attrs(message.topic))
      })
      relay.on('deadLettered', ({ topic, reason }) => {
        const a = api()
        const m = a && liveInstruments(a)
        if (m) m.deadLettered.add(1, { ...attrs(topic), 'outboxkit.dead_letter.reason': reason })
      })
    },

    async prepare() {
      if (enabled) await loadOtel()
    },

    async started() {
      if (!enabled) return
      const a = await loadOtel()
      if (!a || !gaugesWanted || gauges) return
      if (typeof backend.stats !== 'function') {
        log.log(
          'debug',
          { backend: backend.name },
          `queue gauges off: the ${backend.name} backend has no stats()`,
        )
        return
      }
      const m = instruments(a)
      const states = ctx.keepDelivered
        ? (['pending', 'processing', 'dead', 'delivered'] as const)
        : (['pending', 'processing', 'dead'] as const)
      const callback = async (result: {
        observe(observable: unknown, value: number, attributes?: Record<string, string>): void
      }) => {
        const stats = await readStats()
        if (!stats) return
        const seen = new Set<string>()
        for (const t of stats.topics) {
          seen.add(t.topic)
          for (const state of states) {
            result.observe(m.queueDepth, t[state] ?? 0, { ...attrs(t.topic), 'outboxkit.state': state })
          }
        }
        // The relay's own topics always report, so an empty queue reads 0, not "no data".
        for (const topic of ctx.topics) {
          if (seen.has(topic)) continue
          for (const state of states)
            result.observe(m.queueDepth, 0, { ...attrs(topic), 'outboxkit.state': state })
        }
        result.observe(m.oldestPendingAge, (stats.oldestPendingAgeMs ?? 0) / 1000, base)
        result.observe(m.oldestDueLag, (stats.oldestDueLagMs ?? 0) / 1000, base)
      }
      const observables = [m.queueDepth, m.oldestPendingAge, m.oldestDueLag]
      m.meter.addBatchObservableCallback(callback as never, observables)
      gauges = { meter: m.meter, observables, callback }
    },

    stopped() {
      const g = gauges
      gauges = undefined
      if (g) g.meter.removeBatchObservableCallback(g.callback as never, g.observables as never)
    },
  }
  return telemetry
}
