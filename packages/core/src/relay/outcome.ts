import type { Settlement } from '../protocol/backend.js'
import type { DeadLetterReason, DeliveredMessage } from './handler-types.js'
import type { InFlight } from './in-flight.js'

/** A handler's outcome, on its way to (or inside) a settle statement. */
export interface Outcome {
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

/** The longest error text written to `last_error`. */
export const MAX_ERROR_TEXT = 4_000

/** The text of a thrown value, for `last_error` and events. */
export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message || error.name
  if (typeof error === 'string') return error
  try {
    return `non-Error thrown: ${JSON.stringify(error) ?? String(error)}`
  } catch {
    return `non-Error thrown: ${String(error)}`
  }
}
