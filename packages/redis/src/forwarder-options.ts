import { OutboxError } from '@outboxkit/core'
import {
  assertKnownOptions,
  type ForwardableMessage,
  formatValue,
  positiveInt,
  positiveMs,
} from '@outboxkit/core/adapter'
import { SOURCE } from './redis-client.js'

/** The stream key of a message: one key, or a function of the message. */
export type StreamTarget = string | ((message: ForwardableMessage) => string)

/** Options of {@link redisStreamForwarder}. */
export interface RedisStreamForwarderOptions {
  /** The stream key every message is XADDed to, or a function of the message that returns it. */
  readonly stream: StreamTarget
  /**
   * How long to wait for the XADD reply before rejecting with `TIMEOUT`.
   *
   * @defaultValue `5_000`
   */
  readonly timeoutMs?: number
  /**
   * Trims the stream on every XADD to about this many entries (`MAXLEN ~ maxLen`: Redis trims
   * whole macro nodes, so the stream may hold somewhat more). Default: no trimming.
   *
   * @defaultValue none: no trimming
   */
  readonly maxLen?: number
}

/** The forwarder's options, checked. */
export interface ForwarderSettings {
  readonly streamOf: (message: ForwardableMessage) => string
  readonly timeoutMs: number
  readonly maxLen: number | undefined
}

/** The default of `timeoutMs`. */
export const DEFAULT_TIMEOUT_MS = 5_000
const OPTION_NAMES = ['stream', 'timeoutMs', 'maxLen'] as const

function invalid(message: string): OutboxError {
  return new OutboxError('INVALID_CONFIG', message, { source: SOURCE })
}

/** A stream key function that checks what the user's function returns, per message. */
function checkedStreamFunction(target: (message: ForwardableMessage) => string) {
  return (message: ForwardableMessage): string => {
    const key = target(message)
    if (typeof key === 'string' && key !== '') return key
    throw invalid(
      `the stream function returned ${formatValue(key)} for message ${message.id}: it must return a non-empty stream key.`,
    )
  }
}

/**
 * The checked settings of `options`.
 *
 * @throws OutboxError `INVALID_CONFIG` for an unknown option name (naming the closest valid one),
 * a missing or empty `stream`, or a `timeoutMs` / `maxLen` out of range, naming what was given.
 */
export function forwarderSettings(options: unknown): ForwarderSettings {
  if (typeof options !== 'object' || options === null)
    throw invalid(`redisStreamForwarder needs options { stream }, got ${formatValue(options)}.`)
  assertKnownOptions(options, OPTION_NAMES, { source: SOURCE, what: 'redisStreamForwarder' })
  const o = options as Record<string, unknown>
  const stream = o.stream
  let streamOf: ForwarderSettings['streamOf']
  if (typeof stream === 'string' && stream !== '') streamOf = () => stream
  else if (typeof stream === 'function')
    streamOf = checkedStreamFunction(stream as (m: ForwardableMessage) => string)
  else
    throw invalid(
      `stream must be a non-empty stream key or a function of the message, got ${formatValue(stream)}.`,
    )
  return {
    streamOf,
    timeoutMs: positiveMs('timeoutMs', o.timeoutMs, DEFAULT_TIMEOUT_MS, SOURCE),
    maxLen: positiveInt('maxLen', o.maxLen, undefined, SOURCE),
  }
}
