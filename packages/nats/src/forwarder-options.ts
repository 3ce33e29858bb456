// The options of jetStreamForwarder: what they are, their defaults, and how they are checked.
import { type DeliveredMessage, OutboxError } from '@outboxkit/core'
import { assertKnownOptions, formatValue, positiveMs } from '@outboxkit/core/adapter'
import { NATS_SOURCE } from './jetstream-client.js'

/** The subject of a message: one subject, or a function of the message. */
export type SubjectOption = string | ((message: DeliveredMessage) => string)

/** The options of {@link jetStreamForwarder}. */
export interface JetStreamForwarderOptions {
  /** The subject each message is published on, or a function of the message that returns it. */
  subject: SubjectOption
  /**
   * How long to wait for the PubAck before the handler rejects with `TIMEOUT` (the relay then
   * retries with backoff).
   *
   * @defaultValue `5_000`
   */
  timeoutMs?: number
  /**
   * The stream that must store the messages: sent as `Nats-Expected-Stream`, so JetStream refuses
   * a message that another stream (or none) would capture. Default: any stream capturing the subject.
   *
   * @defaultValue none: any stream capturing the subject
   */
  stream?: string
}

/** The options once checked. */
export interface ResolvedForwarderOptions {
  subjectOf(message: DeliveredMessage): string
  readonly timeoutMs: number
  readonly stream: string | undefined
}

/** The default of `timeoutMs`. */
export const DEFAULT_TIMEOUT_MS = 5_000
const OPTION_NAMES = ['subject', 'timeoutMs', 'stream'] as const
// A publish subject: dot-separated tokens, no wildcard, no whitespace, no empty token.
const SUBJECT = /^[^\s.*>]+(\.[^\s.*>]+)*$/

/**
 * Why `subject` cannot be published on, or `undefined` when it can.
 *
 * @param subject - what the option or the subject function gave
 */
export function invalidSubjectReason(subject: unknown): string | undefined {
  if (typeof subject !== 'string') return `a subject is a string, got ${formatValue(subject)}`
  if (!SUBJECT.test(subject))
    return `${JSON.stringify(subject)} is not a publish subject (dot-separated tokens, no wildcard, no whitespace)`
  return undefined
}

const invalid = (message: string) => new OutboxError('INVALID_CONFIG', message, { source: NATS_SOURCE })

function subjectResolver(subject: unknown): (message: DeliveredMessage) => string {
  if (typeof subject === 'function') {
    return (message) => {
      const value: unknown = subject(message)
      const reason = invalidSubjectReason(value)
      if (reason !== undefined)
        throw invalid(`the subject function gave no subject for message ${message.id}: ${reason}.`)
      return value as string
    }
  }
  const reason = invalidSubjectReason(subject)
  if (reason !== undefined)
    throw invalid(`jetStreamForwarder's subject must be a subject or a function of the message: ${reason}.`)
  return () => subject as string
}

/**
 * Checks the options of {@link jetStreamForwarder} and applies the defaults.
 *
 * @throws OutboxError `INVALID_CONFIG` for an unknown option (naming the closest valid one), a
 * missing or invalid `subject`, a `timeoutMs` that is not a positive number of milliseconds, or a
 * `stream` that is not a non-empty name.
 */
export function resolveForwarderOptions(options: unknown): ResolvedForwarderOptions {
  if (options === null || typeof options !== 'object')
    throw invalid(
      `jetStreamForwarder(js, options) needs an options object with a subject, got ${formatValue(options)}.`,
    )
  assertKnownOptions(options, OPTION_NAMES, { source: NATS_SOURCE, what: 'jetStreamForwarder' })
  const given = options as Record<string, unknown>
  const stream = given.stream
  if (stream !== undefined && (typeof stream !== 'string' || !/^[^\s.*>]+$/.test(stream)))
    throw invalid(
      `stream must be a stream name (no dot, wildcard or whitespace), got ${formatValue(stream)}.`,
    )
  return {
    subjectOf: subjectResolver(given.subject),
    timeoutMs: positiveMs('timeoutMs', given.timeoutMs, DEFAULT_TIMEOUT_MS, NATS_SOURCE),
    stream,
  }
}
