import { OutboxError } from './errors.js'
import { formatValue } from './format-value.js'

// The one place where an option object's names and numbers are checked: defineOutbox, the relay,
// every backend factory. An option is checked, never guessed: an unknown name is refused with the
// closest valid one, a number out of range is refused with what was given.

/** Where an option object comes from, for {@link assertKnownOptions}'s message. */
export interface KnownOptionsContext {
  /** The adapter or component raising the error (the `[outboxkit] [source]` prefix), e.g. `'relay'`. */
  readonly source: string
  /** What takes the options, as the user wrote it, e.g. `'createRelay'` or `'pgBackend({ pool })'`. */
  readonly what: string
  /**
   * How to name the valid options when listing all of them would not help (a driver's dozens of
   * connection options), e.g. `'pool, commandTimeoutMs and the options of pg.Pool'`. Default: the
   * sorted list of `known`.
   */
  readonly valid?: string
}

/**
 * The edit distance between `a` and `b`, ignoring case: insertions, deletions, substitutions and
 * swaps of two neighbouring characters (optimal string alignment), so `tabel` is one edit from
 * `table`.
 */
function editDistance(a: string, b: string): number {
  const x = a.toLowerCase()
  const y = b.toLowerCase()
  let before: number[] = []
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j)
  for (let i = 1; i <= x.length; i++) {
    const row = [i]
    for (let j = 1; j <= y.length; j++) {
      const cost = x[i - 1] === y[j - 1] ? 0 : 1
      let d = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost)
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1])
        d = Math.min(d, before[j - 2]! + 1)
      row[j] = d
    }
    before = previous
    previous = row
  }
  return previous[y.length]!
}

/**
 * The valid name closest to `name` (edit distance, ignoring case), or `undefined` when none is
 * close enough to be what was meant: at most one edit in four characters of `name` (at least one,
 * at most three), or a valid name that contains it whole (`delay` suggests `delayMs`, `timeout`
 * suggests `busyTimeoutMs`: a part was left out). So `pollIntervalMS` suggests `pollIntervalMs`,
 * and `transport` suggests nothing when no valid name is like it.
 *
 * @param name - the unknown name the caller wrote
 * @param known - the valid names
 */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(name.length / 4)))
  const lower = name.toLowerCase()
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  for (const candidate of known) {
    const d = editDistance(name, candidate)
    const other = candidate.toLowerCase()
    const contains = lower.length >= 4 && other.includes(lower)
    if ((d <= limit || contains) && d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return best
}

/**
 * The first own enumerable key of `value` that is not in `known`, or `undefined` when there is
 * none (also for a value that is not an object).
 *
 * @param value - the object to check
 * @param known - the valid names
 */
export function unknownKeyOf(value: unknown, known: readonly string[]): string | undefined {
  if (value === null || typeof value !== 'object') return undefined
  for (const key of Object.keys(value)) if (!known.includes(key)) return key
  return undefined
}

/**
 * ` (did you mean "closest"?)` for an unknown name, or `''` when no valid name is close (see
 * {@link closestName}): the hint an error message appends after the unknown name.
 *
 * @param name - the unknown name
 * @param known - the valid names
 */
export function didYouMean(name: string, known: readonly string[]): string {
  const closest = closestName(name, known)
  return closest === undefined ? '' : ` (did you mean ${JSON.stringify(closest)}?)`
}

/**
 * Throws `INVALID_CONFIG` when `options` has an own enumerable key that is not in `known`, naming
 * it and the closest valid name, then listing the valid ones:
 * `[outboxkit] [relay] unknown option "pollIntervalMS" for createRelay (did you mean
 * "pollIntervalMs"?). Valid options: backend, batchSize, ...`. A JavaScript caller's typo is
 * then an error, not an option silently ignored. Does nothing when `options` is not an object
 * (the caller checks its shape).
 *
 * @param options - the options object as the user passed it
 * @param known - every valid option name
 * @param context - `source` (the message prefix), `what` (what takes the options) and optionally
 * how to name the `valid` options
 * @throws OutboxError `INVALID_CONFIG` for the first unknown key.
 */
export function assertKnownOptions(
  options: unknown,
  known: readonly string[],
  context: KnownOptionsContext,
): void {
  const key = unknownKeyOf(options, known)
  if (key === undefined) return
  const valid =
    context.valid ??
    (known.length === 0 ? `none: ${context.what} takes no options` : [...known].sort().join(', '))
  throw new OutboxError(
    'INVALID_CONFIG',
    `unknown option ${JSON.stringify(key)} for ${context.what}${didYouMean(key, known)}. Valid options: ${valid}.`,
    { source: context.source },
  )
}

/**
 * A number option's check: `value` when it is a number `accepts` takes, `fallback` (returned as is,
 * `undefined`: no default) when `value` is `undefined` or `null`.
 *
 * @param name - the option name, as the user wrote it, for the message (e.g. `'batchSize'`)
 * @param value - what the user passed
 * @param fallback - the default, returned as is when `value` is absent (`undefined`: no default)
 * @param source - the `[outboxkit] [source]` of the error, e.g. `'relay'`
 * @throws OutboxError `INVALID_CONFIG` naming the option and what was given.
 */
export type NumberOptionCheck = <F extends number | undefined>(
  name: string,
  value: unknown,
  fallback: F,
  source: string,
) => number | F

/** The {@link NumberOptionCheck} of the numbers `accepts` takes, refused as "`name` must be `what`". */
function numberOption(accepts: (value: number) => boolean, what: string): NumberOptionCheck {
  return (name, value, fallback, source) => {
    if (value === undefined || value === null) return fallback
    if (typeof value !== 'number' || !accepts(value)) {
      throw new OutboxError('INVALID_CONFIG', `${name} must be ${what}, got ${formatValue(value)}.`, {
        source,
      })
    }
    return value
  }
}

/** `value` as an integer >= 1, or `fallback` when it is absent (see {@link NumberOptionCheck}). */
export const positiveInt: NumberOptionCheck = numberOption(
  (v) => Number.isInteger(v) && v >= 1,
  'an integer >= 1',
)

/**
 * `value` as a finite number of milliseconds > 0 (`'commandTimeoutMs'`, say), or `fallback` when
 * it is absent (see {@link NumberOptionCheck}).
 */
export const positiveMs: NumberOptionCheck = numberOption(
  (v) => Number.isFinite(v) && v > 0,
  'a finite number of milliseconds > 0',
)

/** True for `{}`-like objects: not null, an array, a Map or a class instance. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}
