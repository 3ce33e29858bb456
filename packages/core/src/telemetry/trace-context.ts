import type { PreparedMessage } from '../outbox/message.js'

/** W3C Trace Context carried in a message's headers. */
export interface TraceHeaders {
  /** `00-<trace id>-<span id>-<flags>`. */
  traceparent: string
  /** Vendor trace state, when there is any. */
  tracestate?: string
}

/** The parts of a `traceparent` header. */
export interface ParsedTraceparent {
  readonly traceId: string
  readonly spanId: string
  readonly traceFlags: number
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/
const ZERO_TRACE = '0'.repeat(32)
const ZERO_SPAN = '0'.repeat(16)

/** Formats a W3C `traceparent` (version 00). */
export function formatTraceparent(traceId: string, spanId: string, traceFlags: number): string {
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`
}

/**
 * Parses a W3C `traceparent` header, or returns `undefined` when it is not valid (wrong shape,
 * version `ff`, all-zero ids, or trailing data on version `00`).
 */
export function parseTraceparent(value: string | undefined): ParsedTraceparent | undefined {
  if (typeof value !== 'string') return undefined
  const m = TRACEPARENT.exec(value.trim())
  if (!m) return undefined
  const [, version, traceId, spanId, flags, rest] = m
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined
  return { traceId: traceId!, spanId: spanId!, traceFlags: Number.parseInt(flags!, 16) }
}

/** The value of header `name` in `headers`, matched without regard to case. */
export function headerValue(headers: Readonly<Record<string, string>>, name: string): string | undefined {
  const exact = headers[name]
  if (typeof exact === 'string') return exact
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return v
  return undefined
}

/**
 * Adds `traceparent` (and `tracestate`) to a prepared message's headers, unless the publisher set
 * either of them itself (then the message is returned unchanged).
 */
export function withTraceHeaders(message: PreparedMessage, trace: TraceHeaders): PreparedMessage {
  const headers: Record<string, string> = message.headers === '{}' ? {} : JSON.parse(message.headers)
  if (headerValue(headers, 'traceparent') !== undefined || headerValue(headers, 'tracestate') !== undefined) {
    return message
  }
  headers.traceparent = trace.traceparent
  if (trace.tracestate) headers.tracestate = trace.tracestate
  return { ...message, headers: JSON.stringify(headers) }
}
