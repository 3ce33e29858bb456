import { type Api, markFailed } from '../telemetry/instruments.js'
import { INSTRUMENTATION_SCOPE } from '../telemetry/metric-names.js'
import { headerValue, parseTraceparent } from '../telemetry/trace-context.js'
import type { DeliveredMessage } from './handler-types.js'
import { Cancel } from './retry.js'

/**
 * Runs the handler call `run` inside a CONSUMER span (`process <topic>`) whose parent is the
 * message's own trace context (its `traceparent`/`tracestate` headers), so a consumer continues
 * the producer's trace. Records the outcome (`delivered`, `retry`, `dead`) on the span.
 */
export async function runInProcessSpan(
  a: Api,
  message: DeliveredMessage,
  attributes: Record<string, string>,
  maxAttempts: number,
  run: () => unknown,
): Promise<unknown> {
  const parent = parentContext(a, message.headers)
  const span = a.trace.getTracer(INSTRUMENTATION_SCOPE).startSpan(
    `process ${message.topic}`,
    {
      kind: a.SpanKind.CONSUMER,
      attributes: {
        ...attributes,
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
    const dead = error instanceof Cancel || message.attempts >= maxAttempts
    span.setAttribute('outboxkit.outcome', dead ? 'dead' : 'retry')
    markFailed(a, span, error)
    throw error
  } finally {
    span.end()
  }
}

function parentContext(a: Api, headers: Readonly<Record<string, string>>) {
  const remote = parseTraceparent(headerValue(headers, 'traceparent'))
  if (!remote) return a.ROOT_CONTEXT
  const tracestate = headerValue(headers, 'tracestate')
  return a.trace.setSpanContext(a.ROOT_CONTEXT, {
    ...remote,
    isRemote: true,
    ...(tracestate ? { traceState: a.createTraceState(tracestate) } : {}),
  })
}
