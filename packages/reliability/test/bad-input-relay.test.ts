// Scenario 9 (relay side): invalid relay options get INVALID_CONFIG before anything runs; handlers
// that throw non-Errors are retried with a readable last_error; a handler that never settles is
// aborted at its lease expiry, reclaimed, and eventually dead-lettered.
import { waitFor } from '@outboxkit/conformance'
import { createRelay, defineOutbox, type Handler, type Outbox, OutboxError, Retry } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import { afterAll, afterEach, describe, expect, test } from 'vitest'
import { z } from 'zod'
import { figuresLine } from '../src/report.js'
import { recordOutcome } from './support/outcome-table.js'
import { nextEvent, World } from './support/world.js'

const w = new World()
afterEach(() => w.cleanup())
afterAll(() => w.close())

function refusedSync(code: string, fn: () => unknown): OutboxError {
  let error: unknown
  try {
    fn()
  } catch (e) {
    error = e
  }
  expect(error, 'expected an OutboxError').toBeInstanceOf(OutboxError)
  expect((error as OutboxError).code).toBe(code)
  return error as OutboxError
}

describe('invalid relay options', () => {
  const outbox = defineOutbox({ table: 'never_created' })
  const backend = () => pgBackend({ connectionString: w.url })
  const base = () => ({ backend: backend(), handlers: { t: () => {} } })
  const options: [string, Record<string, unknown>][] = [
    ['concurrency 0', { concurrency: 0 }],
    ['concurrency -1', { concurrency: -1 }],
    ['concurrency 1.5', { concurrency: 1.5 }],
    ['concurrency NaN', { concurrency: Number.NaN }],
    ['concurrency Infinity', { concurrency: Number.POSITIVE_INFINITY }],
    ["concurrency '5' (a string)", { concurrency: '5' }],
    ['batchSize 0', { batchSize: 0 }],
    ['batchSize 2.5', { batchSize: 2.5 }],
    ['maxAttempts 0', { maxAttempts: 0 }],
    ['maxAttempts 1.5', { maxAttempts: 1.5 }],
    ['leaseMs 0', { leaseMs: 0 }],
    ['leaseMs -1', { leaseMs: -1 }],
    ['leaseMs NaN', { leaseMs: Number.NaN }],
    ['leaseMs Infinity', { leaseMs: Number.POSITIVE_INFINITY }],
    ['pollIntervalMs 0', { pollIntervalMs: 0 }],
    ['pollIntervalMs NaN', { pollIntervalMs: Number.NaN }],
    ['graceMs -1', { graceMs: -1 }],
    ['retry.baseMs -1', { retry: { baseMs: -1 } }],
    ['retry.maxMs below baseMs', { retry: { baseMs: 1_000, maxMs: 10 } }],
    ['retry.jitter 2', { retry: { jitter: 2 } }],
    ['retry.jitter NaN', { retry: { jitter: Number.NaN } }],
    ['handlers {}', { handlers: {} }],
    ['a handler that is not a function', { handlers: { t: 'send' } }],
    ['backend missing', { backend: undefined }],
    ['backend a plain object', { backend: {} }],
  ]
  test.each(options)('createRelay refuses %s', (label, override) => {
    refusedSync('INVALID_CONFIG', () => createRelay(outbox, { ...base(), ...override } as never))
    recordOutcome('relay option', label, '`INVALID_CONFIG` at `createRelay`, nothing started')
  })

  test('createRelay refuses a handler for a topic the outbox does not define', () => {
    const typed = defineOutbox({ table: 'never_created', topics: { a: z.object({}) } })
    refusedSync('INVALID_CONFIG', () =>
      createRelay(typed, { backend: backend(), handlers: { b: () => {} } as never }),
    )
    recordOutcome(
      'relay option',
      'a handler for a topic not in `topics`',
      '`INVALID_CONFIG` at `createRelay`',
    )
  })

  test('createRelay refuses something that is not an outbox, and no options', () => {
    refusedSync('INVALID_CONFIG', () => createRelay({ table: 'x' } as never, base()))
    refusedSync('INVALID_CONFIG', () => createRelay(outbox, undefined as never))
    recordOutcome('relay option', 'a look-alike outbox; no options object', '`INVALID_CONFIG`')
  })

  test.each([
    ['stop({ graceMs: -1 })', -1],
    ['stop({ graceMs: NaN })', Number.NaN],
  ])('%s rejects', async (label, graceMs) => {
    const relay = createRelay(outbox, base())
    await expect(relay.stop({ graceMs })).rejects.toMatchObject({ code: 'INVALID_CONFIG' })
    recordOutcome('relay option', label, '`INVALID_CONFIG` (rejected promise)')
  })

  test.each([
    ['new Retry({ delayMs: -1 })', -1],
    ['new Retry({ delayMs: NaN })', Number.NaN],
    ['new Retry({ delayMs: Infinity })', Number.POSITIVE_INFINITY],
  ])('%s throws', (label, delayMs) => {
    refusedSync('INVALID_CONFIG', () => new Retry({ delayMs }))
    recordOutcome('relay option', label, '`INVALID_CONFIG` thrown by the constructor')
  })

  test.each([
    ['pgBackend commandTimeoutMs 0', 0],
    ['pgBackend commandTimeoutMs -5', -5],
    ['pgBackend commandTimeoutMs NaN', Number.NaN],
  ])('%s', (label, commandTimeoutMs) => {
    refusedSync('INVALID_CONFIG', () => pgBackend({ connectionString: w.url, commandTimeoutMs }))
    recordOutcome('relay option', label, '`INVALID_CONFIG` at `pgBackend`')
  })
})

describe('handlers that throw what is not an Error', () => {
  const cyclic: Record<string, unknown> = {}
  cyclic.self = cyclic
  const thrown: [string, () => unknown, string | RegExp, string?][] = [
    ['a string', () => 'plain string', 'plain string'],
    ['a number', () => 42, 'non-Error thrown: 42'],
    ['null', () => null, 'non-Error thrown: null'],
    ['undefined', () => undefined, 'non-Error thrown: undefined'],
    ['a plain object', () => ({ code: 'E1' }), 'non-Error thrown: {"code":"E1"}'],
    ['a cyclic object', () => cyclic, 'non-Error thrown: [object Object]'],
    ['a Symbol', () => Symbol('s'), 'non-Error thrown: Symbol(s)'],
    ['an Error with an empty message', () => new TypeError(''), 'TypeError'],
    ['a 1 MiB string', () => 'e'.repeat(1_048_576), /^e{4000}$/, 'its first 4 000 characters'],
    [
      'new Retry({ delayMs: -1 }) (its constructor throws)',
      () => new Retry({ delayMs: -1 }),
      /Retry delayMs must be a finite number >= 0, got -1/,
      'the `INVALID_CONFIG` message: an ordinary failure, not a Retry',
    ],
  ]
  test('each is retried with a readable last_error and the relay keeps running', async () => {
    const outbox: Outbox = await w.outbox('bad_throw')
    const handlers: Record<string, Handler> = {}
    thrown.forEach(([, make], i) => {
      handlers[`t${i}`] = () => {
        throw make()
      }
    })
    const relay = w.relay(outbox, {
      handlers,
      pollIntervalMs: 100,
      retry: { baseMs: 3_600_000, maxMs: 3_600_000, jitter: 0 },
      notify: false,
    })
    const retried: unknown[] = []
    relay.on('retried', (e) => retried.push(e.error))
    const published = await w.publish(
      outbox,
      thrown.map((_, i) => ({ topic: `t${i}`, payload: i })),
    )
    await relay.start()
    await waitFor(() => retried.length === thrown.length, { timeoutMs: 20_000, what: 'every failure' })
    for (const [i, [label, , expected, says]] of thrown.entries()) {
      const [row] = await w.rows(outbox, published[i]!.id)
      expect(row, label).toMatchObject({ state: 'pending', attempts: 1 })
      if (typeof expected === 'string') expect(row!.last_error, label).toBe(expected)
      else expect(row!.last_error, label).toMatch(expected)
      recordOutcome(
        'handler',
        `throws ${label}`,
        `retried with backoff, \`last_error\` = ${typeof expected === 'string' ? `\`${expected}\`` : says}`,
      )
    }
    expect(relay.running).toBe(true)
    expect(relay.stats.errors).toBe(0)
  })
})

test('a handler that never settles is aborted at its lease expiry, reclaimed, and dead-lettered after maxAttempts', async () => {
  const outbox = await w.outbox('bad_hang')
  const maxAttempts = 2
  const calls: number[] = []
  const aborts: string[] = []
  const relay = w.relay(outbox, {
    handlers: {
      t: (message, { signal }) => {
        calls.push(message.attempts)
        signal.addEventListener('abort', () => aborts.push(String((signal.reason as Error).message)))
        return new Promise(() => {}) // never settles, ignores the signal
      },
    },
    leaseMs: 400,
    pollIntervalMs: 100,
    maxAttempts,
    notify: false,
  })
  const [m] = await w.publish(outbox, [{ topic: 't', payload: {} }])
  const dead = nextEvent(relay, 'deadLettered', { timeoutMs: 30_000 })
  await relay.start()
  const event = await dead
  expect(event).toMatchObject({ id: m!.id, reason: 'max-attempts', attempts: maxAttempts, settled: true })
  const [row] = await w.rows(outbox, m!.id)
  expect(row).toMatchObject({ state: 'dead', attempts: maxAttempts })
  expect(row!.last_error).toContain(`lease expired after attempt ${maxAttempts} of ${maxAttempts}`)
  expect(calls).toEqual([1, 2])
  expect(aborts).toHaveLength(2)
  expect(aborts.every((a) => a.includes('lease expired'))).toBe(true)
  expect(relay.stats.inFlight).toBe(0) // the abandoned handlers do not hold slots
  console.log(
    figuresLine('never-settling-handler', {
      maxAttempts,
      handlerCalls: calls.length,
      aborts: aborts.length,
      state: row!.state,
    }),
  )
  recordOutcome(
    'handler',
    'never settles (ignores its abort signal)',
    'aborted at each lease expiry (slot freed), reclaimed; dead-lettered at claim after `maxAttempts` (`attempts = maxAttempts`)',
  )
})

test('a stored payload that fails the topic schema at delivery is dead-lettered at once', async () => {
  const table = await w.outbox('bad_stored')
  const typed = defineOutbox({ table: table.table.display, topics: { t: z.object({ orderId: z.string() }) } })
  const [m] = await w.publish(table, [{ topic: 't', payload: { orderId: 7 } }]) // written without the schema
  let called = false
  const relay = w.relay(typed, {
    handlers: {
      t: () => {
        called = true
      },
    },
    pollIntervalMs: 100,
    notify: false,
  })
  const dead = nextEvent(relay, 'deadLettered')
  await relay.start()
  expect(await dead).toMatchObject({ id: m!.id, reason: 'schema', attempts: 1 })
  expect(called).toBe(false)
  const [row] = await w.rows(table, m!.id)
  expect(row).toMatchObject({ state: 'dead', attempts: 1 })
  recordOutcome(
    'handler',
    'stored payload fails the topic schema at delivery',
    'dead-lettered at once (reason `schema`), handler not called',
  )
})
