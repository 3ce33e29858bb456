import { formatIssues, type StandardSchemaV1 } from '../outbox/standard-schema.js'
import { backoffDelay } from './backoff.js'
import type { DeadLetterReason, DeliveredMessage, Handler, HandlerContext } from './handler-types.js'
import { type InFlight, signalOf } from './in-flight.js'
import { errorText, MAX_ERROR_TEXT, type Outcome } from './outcome.js'
import type { RelayTelemetry } from './relay-telemetry.js'
import { Cancel, type ResolvedRetryPolicy, Retry } from './retry.js'

/** What delivery needs: the handlers, schemas and policies. It holds no relay state. */
export interface DeliveryDeps {
  readonly handlers: ReadonlyMap<string, Handler>
  readonly schemas: Readonly<Record<string, StandardSchemaV1>> | undefined
  readonly telemetry: Pick<RelayTelemetry, 'process' | 'tracesProcess'>
  readonly maxAttempts: number
  readonly retry: ResolvedRetryPolicy
  /** The handler's outcome is known: write it. */
  onOutcome(entry: InFlight, outcome: Outcome): void
}

/** The headers of a message published without any. */
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})

/**
 * Delivers one claimed message: parses its payload and headers, validates the payload against the
 * topic's schema, calls the handler outside any transaction, and turns what it did into an
 * {@link Outcome} (delivered, retry with backoff, or dead).
 */
export function deliver(entry: InFlight, deps: DeliveryDeps): void {
  const { row } = entry
  let payload: unknown
  let headers: Record<string, string>
  try {
    payload = JSON.parse(row.payload)
    // Most messages carry no headers: share one frozen empty object instead of parsing '{}'.
    headers = row.headers === '{}' ? NO_HEADERS : JSON.parse(row.headers)
  } catch (err) {
    const why = `stored payload or headers are not valid JSON: ${errorText(err)}`
    dead(entry, deps, undefined, 'invalid-payload', why)
    return
  }
  const schema = deps.schemas?.[row.topic]
  if (!schema) {
    run(entry, deps, payload, headers)
    return
  }
  // Set now, so a handler given up on during an async validation still has its message.
  messageOf(entry, payload, headers)
  void validateThenRun(entry, deps, schema, payload, headers)
}

/**
 * Gives up on a running handler (a slot message past its deadline, or the relay stopping): the
 * outcome is a failure with `error`, retried with backoff or dead at `maxAttempts`, as if the
 * handler had thrown it. What the handler does afterwards is ignored.
 */
export function giveUp(entry: InFlight, deps: DeliveryDeps, error: unknown): void {
  if (entry.message) failed(entry, deps, entry.message, error)
}

async function validateThenRun(
  entry: InFlight,
  deps: DeliveryDeps,
  schema: StandardSchemaV1,
  payload: unknown,
  headers: Record<string, string>,
): Promise<void> {
  let result = schema['~standard'].validate(payload)
  if (result instanceof Promise) {
    try {
      result = await result
    } catch (err) {
      return dead(entry, deps, undefined, 'schema', `payload schema threw: ${errorText(err)}`)
    }
  }
  if (result.issues) {
    const topic = JSON.stringify(entry.row.topic)
    return dead(
      entry,
      deps,
      undefined,
      'schema',
      `payload does not match the schema of topic ${topic}: ${formatIssues(result.issues)}`,
    )
  }
  run(entry, deps, result.value, headers)
}

/** Calls the handler; its outcome follows when it returns or its promise settles. */
function run(entry: InFlight, deps: DeliveryDeps, payload: unknown, headers: Record<string, string>): void {
  const message = messageOf(entry, payload, headers)
  const handler = deps.handlers.get(message.topic)!
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
    result = deps.telemetry.tracesProcess()
      ? deps.telemetry.process(message, () => handler(message, context))
      : handler(message, context)
  } catch (error) {
    failed(entry, deps, message, error)
    return
  }
  if (!isThenable(result)) {
    succeeded(entry, deps, message)
    return
  }
  // A promise, or another thenable adopted the way `await` would.
  const settled = result instanceof Promise ? result : Promise.resolve(result)
  settled.then(
    () => succeeded(entry, deps, message),
    (error: unknown) => failed(entry, deps, message, error),
  )
}

function messageOf(entry: InFlight, payload: unknown, headers: Record<string, string>): DeliveredMessage {
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
  return message
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  if (value instanceof Promise) return true
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  )
}

function succeeded(entry: InFlight, deps: DeliveryDeps, message: DeliveredMessage): void {
  const { row } = entry
  deps.onOutcome(entry, {
    entry,
    settlement: { id: row.id, attempts: row.attempts, outcome: 'delivered' },
    message,
    durationMs: Date.now() - entry.startedAt,
  })
}

function failed(entry: InFlight, deps: DeliveryDeps, message: DeliveredMessage, error: unknown): void {
  const text = errorText(error).slice(0, MAX_ERROR_TEXT)
  if (error instanceof Cancel) {
    dead(entry, deps, message, 'cancel', text)
    return
  }
  if (message.attempts >= deps.maxAttempts) {
    const why =
      error instanceof Retry ? `Retry requested on the final attempt (${deps.maxAttempts}): ${text}` : text
    dead(entry, deps, message, 'max-attempts', why)
    return
  }
  const delayMs =
    error instanceof Retry && error.delayMs !== undefined
      ? error.delayMs
      : backoffDelay(deps.retry, message.attempts)
  deps.onOutcome(entry, {
    entry,
    settlement: { id: message.id, attempts: message.attempts, outcome: 'retry', delayMs, error: text },
    message,
    error,
  })
}

function dead(
  entry: InFlight,
  deps: DeliveryDeps,
  message: DeliveredMessage | undefined,
  reason: DeadLetterReason,
  error: string,
): void {
  const { row } = entry
  deps.onOutcome(entry, {
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
