import type { Outbox } from '../outbox/define-outbox.js'
import { OutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'
import { assertKnownOptions, positiveMs } from '../outbox/options.js'
import type { OutboxBackend } from '../protocol/backend.js'
import { type Api, liveInstruments, SYSTEM, tracerRegistered } from '../telemetry/instruments.js'
import type { SafeLogger } from '../telemetry/logger.js'
import { loadOtel, otelNow } from '../telemetry/otel.js'
import type { DeliveredMessage } from './handler-types.js'
import { runInProcessSpan } from './process-span.js'
import { QueueGauges } from './queue-gauges.js'
import type { Relay } from './relay-types.js'

/** Telemetry options of a relay (the `telemetry` option of `createRelay`). */
export interface RelayTelemetryOptions {
  /**
   * Spans and metrics through `@opentelemetry/api`, when it is installed.
   *
   * @defaultValue `true`
   */
  enabled?: boolean
  /**
   * Register the queue gauges (depth by topic and state, oldest pending age, oldest due lag),
   * read with one `stats` statement per collection at most every `statsIntervalMs`.
   *
   * @defaultValue `true`
   */
  queueGauges?: boolean
  /**
   * Shortest time between two stats statements, in ms; collections in between reuse the last read.
   *
   * @defaultValue `15_000`
   */
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

/** Resolves the `telemetry` option of `createRelay`. */
function resolveOption(option: boolean | RelayTelemetryOptions | undefined) {
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
  if (typeof option === 'object') {
    assertKnownOptions(option, ['enabled', 'queueGauges', 'statsIntervalMs'], {
      source: 'relay',
      what: 'the telemetry option of createRelay',
    })
  }
  const opts: RelayTelemetryOptions = typeof option === 'object' ? option : { enabled: option ?? true }
  const enabled = opts.enabled !== false
  return {
    enabled,
    gaugesWanted: enabled && opts.queueGauges !== false,
    statsIntervalMs: positiveMs('telemetry.statsIntervalMs', opts.statsIntervalMs, 15_000, 'relay'),
  }
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
  const { enabled, gaugesWanted, statsIntervalMs } = resolveOption(option)
  const base = { 'messaging.system': SYSTEM, 'outboxkit.table': ctx.outbox.table.display }
  const attrs = (topic: string) => ({ ...base, 'messaging.destination.name': topic })
  if (enabled) void loadOtel()
  const api = (): Api | null => (enabled ? (otelNow() ?? null) : null)
  const gauges = new QueueGauges({ ...ctx, statsIntervalMs, base, attrs })
  return {
    tracesProcess() {
      const a = api()
      return a !== null && tracerRegistered(a)
    },
    async process(message, run) {
      const a = api()
      if (!a || !tracerRegistered(a)) return run()
      return runInProcessSpan(a, message, attrs(message.topic), ctx.maxAttempts, run)
    },
    attach(relay) {
      if (enabled) countOutcomes(relay, api, attrs)
    },
    async prepare() {
      if (enabled) await loadOtel()
    },
    async started() {
      if (!enabled) return
      const a = await loadOtel()
      if (a && gaugesWanted) gauges.register(a)
    },
    stopped() {
      gauges.unregister()
    },
  }
}

/** Subscribes the outcome counters and histograms to the relay's events. */
function countOutcomes(
  relay: Relay,
  api: () => Api | null,
  attrs: (topic: string) => Record<string, string>,
) {
  const live = () => {
    const a = api()
    return a && liveInstruments(a)
  }
  relay.on('delivered', ({ message, durationMs }) => {
    const m = live()
    if (!m) return
    const at = attrs(message.topic)
    m.delivered.add(1, at)
    m.handlerDuration.record(durationMs / 1000, at)
    m.deliveryDelay.record(Math.max(0, Date.now() - message.createdAt.getTime()) / 1000, at)
  })
  relay.on('retried', ({ message }) => {
    const m = live()
    if (m) m.retried.add(1, attrs(message.topic))
  })
  relay.on('deadLettered', ({ topic, reason }) => {
    const m = live()
    if (m) m.deadLettered.add(1, { ...attrs(topic), 'outboxkit.dead_letter.reason': reason })
  })
}
