// The one option checker (outbox/options.ts): an unknown name is refused with the closest valid
// one, numbers are checked once for every caller. Pure logic: no database.
import { isOutboxError } from '@outboxkit/core'
import { assertKnownOptions, closestName, positiveInt, positiveMs } from '@outboxkit/core/adapter'
import { describe, expect, test } from 'vitest'

function thrown(fn: () => unknown): Error {
  try {
    fn()
  } catch (err) {
    return err as Error
  }
  throw new Error('expected a throw')
}

const RELAY = ['backend', 'handlers', 'concurrency', 'batchSize', 'pollIntervalMs', 'leaseMs', 'maxAttempts']

describe('closestName', () => {
  test.each<[string, readonly string[], string | undefined]>([
    ['pollIntervalMS', RELAY, 'pollIntervalMs'], // case only
    ['pollintervalms', RELAY, 'pollIntervalMs'],
    ['batchsize', RELAY, 'batchSize'],
    ['concurency', RELAY, 'concurrency'], // one deletion
    ['laseMs', RELAY, 'leaseMs'],
    ['tabel', ['table', 'topics', 'notify'], 'table'], // a swap of two neighbours is one edit
    ['delay', ['topic', 'payload', 'key', 'headers', 'dedupKey', 'delayMs'], 'delayMs'], // a part left out
    ['timeout', ['filename', 'busyTimeoutMs', 'wal'], 'busyTimeoutMs'],
    ['transport', ['table', 'topics', 'orderedTopics', 'maxPayloadBytes', 'notify'], undefined],
    ['x', RELAY, undefined],
    ['connectionTimeoutMillis', ['connection', 'connect_timeout'], undefined], // a valid name inside it is no hint
    ['anything', [], undefined],
  ])('%s → %s', (name, known, expected) => {
    expect(closestName(name, known)).toBe(expected)
  })
})

describe('assertKnownOptions', () => {
  test('names the unknown option, the closest valid one, and lists the valid ones', () => {
    const err = thrown(() =>
      assertKnownOptions({ backend: 1, pollIntervalMS: 500 }, RELAY, {
        source: 'relay',
        what: 'createRelay',
      }),
    )
    expect(isOutboxError(err, 'INVALID_CONFIG')).toBe(true)
    expect(err.message).toBe(
      '[outboxkit] [relay] unknown option "pollIntervalMS" for createRelay (did you mean "pollIntervalMs"?). Valid options: backend, batchSize, concurrency, handlers, leaseMs, maxAttempts, pollIntervalMs.',
    )
  })

  test('without a close name it only lists the valid ones; `valid` replaces the list', () => {
    expect(
      thrown(() =>
        assertKnownOptions({ transport: 'wal' }, ['table', 'topics'], {
          source: 'core',
          what: 'defineOutbox',
        }),
      ).message,
    ).toBe('[outboxkit] [core] unknown option "transport" for defineOutbox. Valid options: table, topics.')
    expect(
      thrown(() =>
        assertKnownOptions({ hots: 'x' }, ['host'], {
          source: 'pg',
          what: 'pgBackend',
          valid: 'the options of pg.Pool',
        }),
      ).message,
    ).toBe(
      '[outboxkit] [pg] unknown option "hots" for pgBackend (did you mean "host"?). Valid options: the options of pg.Pool.',
    )
    expect(thrown(() => assertKnownOptions({ a: 1 }, [], { source: 'x', what: 'f()' })).message).toContain(
      'Valid options: none: f() takes no options.',
    )
  })

  test('checks own enumerable keys only, and ignores what is not an object', () => {
    const inherited = Object.create({ notAnOption: 1 }) as Record<string, unknown>
    inherited.table = 'outbox'
    Object.defineProperty(inherited, 'hidden', { value: 1, enumerable: false })
    expect(() => assertKnownOptions(inherited, ['table'], { source: 'core', what: 'f' })).not.toThrow()
    expect(() => assertKnownOptions({ [Symbol('s')]: 1 }, [], { source: 'core', what: 'f' })).not.toThrow()
    for (const value of [undefined, null, 42, 'string']) {
      expect(() => assertKnownOptions(value, [], { source: 'core', what: 'f' })).not.toThrow()
    }
    expect(() => assertKnownOptions({ table: 1 }, ['table'], { source: 'core', what: 'f' })).not.toThrow()
  })
})

describe('positiveInt and positiveMs', () => {
  test('absent (undefined or null) gives the fallback, which may be undefined', () => {
    expect(positiveInt('batchSize', undefined, 500, 'relay')).toBe(500)
    expect(positiveInt('batchSize', null, 500, 'relay')).toBe(500)
    expect(positiveMs('commandTimeoutMs', undefined, undefined, 'pg')).toBeUndefined()
    expect(positiveInt('batchSize', 1, 500, 'relay')).toBe(1)
    expect(positiveMs('leaseMs', 0.5, 30_000, 'relay')).toBe(0.5)
  })

  test.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '3', true, {}])(
    'positiveInt refuses %s with INVALID_CONFIG naming the option',
    (value) => {
      const err = thrown(() => positiveInt('batchSize', value, 500, 'relay'))
      expect(isOutboxError(err, 'INVALID_CONFIG')).toBe(true)
      expect(err.message).toMatch(/^\[outboxkit\] \[relay\] batchSize must be an integer >= 1, got /)
    },
  )

  test.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '5000', false])(
    'positiveMs refuses %s with INVALID_CONFIG naming the option',
    (value) => {
      const err = thrown(() => positiveMs('commandTimeoutMs', value, undefined, 'mysql'))
      expect(isOutboxError(err, 'INVALID_CONFIG')).toBe(true)
      expect(err.message).toMatch(
        /^\[outboxkit\] \[mysql\] commandTimeoutMs must be a finite number of milliseconds > 0, got /,
      )
    },
  )
})
