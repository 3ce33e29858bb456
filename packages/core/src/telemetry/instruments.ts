import { INSTRUMENTATION_SCOPE, metricNames } from './metric-names.js'
import type { OtelApi } from './otel.js'

export const SYSTEM = 'outboxkit'
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
const DELAY_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400]

export type Api = OtelApi
export type Instruments = ReturnType<typeof createInstruments>

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
    slotRetained: meter.createObservableGauge(metricNames.slotRetained, {
      unit: 'By',
      description: "WAL retained by the outbox's replication slot",
    }),
    slotLag: meter.createObservableGauge(metricNames.slotLag, {
      unit: 'By',
      description: "WAL written since the replication slot's last confirmation",
    }),
  }
}

let cached: { provider: unknown; instruments: Instruments; live: boolean } | undefined

/** The instruments of the current global meter provider (re-created when the provider changes). */
export function instruments(api: Api): Instruments {
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
export function liveInstruments(api: Api): Instruments | undefined {
  const m = instruments(api)
  return cached!.live ? m : undefined
}

let noopTracerProvider: unknown
/**
 * True when the application registered a tracer provider. Without one the API's tracer is a no-op:
 * the relay then skips its span work (and `context.with`) per message altogether.
 */
export function tracerRegistered(api: Api): boolean {
  const provider = api.trace.getTracerProvider() as { getDelegate?: () => unknown }
  noopTracerProvider ??= new api.ProxyTracerProvider().getDelegate()
  const delegate = typeof provider.getDelegate === 'function' ? provider.getDelegate() : provider
  return delegate !== noopTracerProvider
}

export function exceptionOf(error: unknown): Error | string {
  if (error instanceof Error) return error
  try {
    return String(error)
  } catch {
    return 'non-Error thrown'
  }
}

export function markFailed(
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
