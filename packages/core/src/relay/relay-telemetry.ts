import { summarizeStats } from '../admin/queries.js'
import type { Outbox } from '../outbox/define-outbox.js'
import { OutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'
import type { OutboxBackend } from '../protocol/backend.js'
import {
  type Api,
  type Instruments,
  instruments,
  liveInstruments,
  markFailed,
  SYSTEM,
  tracerRegistered,
} from '../telemetry/instruments.js'
import type { SafeLogger } from '../telemetry/logger.js'
import { INSTRUMENTATION_SCOPE } from '../telemetry/metric-names.js'
import { loadOtel, otelNow } from '../telemetry/otel.js'
import { headerValue, parseTraceparent } from '../telemetry/trace-context.js'
import type { DeliveredMessage } from './handler-types.js'
import type { Relay } from './relay-types.js'
import { Cancel } from './retry.js'

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
      `telemetry.${name} must be a finite number of milliseconds > 0, got ${formatValue(v)}.`,
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
      `telemetry must be true, false or { enabled, queueGauges, statsIntervalMs }, got ${formatValue(option)}.`,
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
