import { OutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'

/**
 * One log method. outboxkit calls it pino-style: structured fields first, then the message, so
 * pino, bunyan and `console` all print something useful.
 */
export type LogMethod = (fields: Record<string, unknown>, message: string) => unknown

/**
 * Any logger with `debug`, `info`, `warn` and `error`: pino, bunyan, `console`, or your own.
 *
 * @example
 * ```ts
 * createRelay(outbox, { backend, handlers, logger: pino() })   // or logger: console
 * ```
 */
export interface Logger {
  debug: LogMethod
  info: LogMethod
  warn: LogMethod
  error: LogMethod
}

/** A log level outboxkit uses. */
export type LogLevel = keyof Logger

/** The logger outboxkit calls internally: never throws, and costs nothing when silent. */
export interface SafeLogger {
  /** False for the default silent logger, so callers can skip building fields. */
  readonly enabled: boolean
  log(level: LogLevel, fields: Record<string, unknown>, message: string): void
}

const SILENT: SafeLogger = { enabled: false, log() {} }

/**
 * Checks a user's `logger` option and wraps it so that a throwing logger never breaks the relay.
 * `undefined` gives the silent logger.
 *
 * @throws OutboxError `INVALID_CONFIG` when `logger` lacks one of the four methods.
 */
export function resolveLogger(logger: unknown, source = 'relay'): SafeLogger {
  if (logger === undefined || logger === null) return SILENT
  const missing = (['debug', 'info', 'warn', 'error'] as const).filter(
    (level) => typeof (logger as Record<string, unknown>)[level] !== 'function',
  )
  if (typeof logger !== 'object' && typeof logger !== 'function') missing.push('debug')
  if (missing.length > 0) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `logger must have debug, info, warn and error methods (pino and console do), got ${formatValue(logger)} without ${missing.join(', ')}.`,
      { source },
    )
  }
  const target = logger as Logger
  return {
    enabled: true,
    log(level, fields, message) {
      try {
        target[level](fields, `[outboxkit] ${message}`)
      } catch {
        // A broken logger must not break delivery.
      }
    },
  }
}
