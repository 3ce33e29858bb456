import type { Outbox } from '../outbox/define-outbox.js'
import type { PreparedMessage, PublishResult } from '../outbox/message.js'
import { type Api, instruments, markFailed, SYSTEM } from './instruments.js'
import { INSTRUMENTATION_SCOPE } from './metric-names.js'
import { loadOtel, otelNow } from './otel.js'
import { formatTraceparent, withTraceHeaders } from './trace-context.js'

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
