import { describe, expect, test } from 'vitest'
import { z } from 'zod'
import { Cancel, Retry } from '../../src/index.js'
import type { ClaimedRow } from '../../src/protocol/backend.js'
import { type DeliveryDeps, deliver } from '../../src/relay/delivery.js'
import type { Handler } from '../../src/relay/handler-types.js'
import { type InFlight, SlotTable } from '../../src/relay/in-flight.js'
import type { Outcome } from '../../src/relay/outcome.js'

const noTelemetry = { tracesProcess: () => false, process: async (_m: unknown, run: () => unknown) => run() }

/** Delivers one row to `handler` and resolves with its outcome. */
function deliverOne(
  handler: Handler,
  rowOverrides: Partial<ClaimedRow> = {},
  options: { maxAttempts?: number; schema?: z.ZodType } = {},
): Promise<{ entry: InFlight; outcome: Outcome }> {
  const row: ClaimedRow = {
    id: 'id-1',
    topic: 't',
    key: 'k',
    payload: '{"n":1}',
    headers: '{}',
    attempts: 1,
    createdAtMs: 1_700_000_000_000,
    state: 'processing',
    ...rowOverrides,
  }
  const entry = new SlotTable(1, 0).take(row, Date.now() + 1_000)
  return new Promise((resolve) => {
    const deps: DeliveryDeps = {
      handlers: new Map([['t', handler]]),
      schemas: options.schema ? { t: options.schema } : undefined,
      telemetry: noTelemetry,
      maxAttempts: options.maxAttempts ?? 3,
      retry: { baseMs: 1_000, maxMs: 60_000, jitter: 0 },
      onOutcome: (e, outcome) => resolve({ entry: e, outcome }),
    }
    deliver(entry, deps)
  })
}

describe('delivery: from a claimed row to an outcome, no relay state', () => {
  test('the handler gets the parsed, frozen message and a lazily created signal; success is delivered', async () => {
    let seen: unknown
    const { outcome } = await deliverOne((message, { signal }) => {
      seen = { ...message, frozen: Object.isFrozen(message), aborted: signal.aborted }
    })
    expect(seen).toEqual({
      id: 'id-1',
      topic: 't',
      key: 'k',
      payload: { n: 1 },
      headers: {},
      attempts: 1,
      createdAt: new Date(1_700_000_000_000),
      frozen: true,
      aborted: false,
    })
    expect(outcome.settlement).toEqual({ id: 'id-1', attempts: 1, outcome: 'delivered' })
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0)
  })

  test('a rejected promise is a retry after the backoff of this attempt', async () => {
    const { outcome } = await deliverOne(async () => Promise.reject(new Error('boom')), { attempts: 2 })
    expect(outcome.settlement).toEqual({
      id: 'id-1',
      attempts: 2,
      outcome: 'retry',
      delayMs: 2_000,
      error: 'boom',
    })
  })

  test('Retry({ delayMs }) sets the delay; on the final attempt it dead-letters instead', async () => {
    const retry = await deliverOne(() => {
      throw new Retry({ delayMs: 5, reason: 'later' })
    })
    expect(retry.outcome.settlement).toMatchObject({ outcome: 'retry', delayMs: 5, error: 'later' })
    const last = await deliverOne(
      () => {
        throw new Retry({ delayMs: 5 })
      },
      { attempts: 3 },
    )
    expect(last.outcome.settlement.outcome).toBe('dead')
    expect(last.outcome.reason).toBe('max-attempts')
    expect(last.outcome.deadError).toMatch(/Retry requested on the final attempt \(3\)/)
  })

  test('Cancel dead-letters at once with its reason', async () => {
    const { outcome } = await deliverOne(() => {
      throw new Cancel('no such customer')
    })
    expect([outcome.settlement.outcome, outcome.reason, outcome.deadError]).toEqual([
      'dead',
      'cancel',
      'no such customer',
    ])
  })

  test('a thenable that is not a Promise is adopted like await would', async () => {
    // biome-ignore lint/suspicious/noThenProperty: the point of the test is a thenable that is not a Promise
    const thenable = { then: (_ok: unknown, fail: (e: unknown) => void) => fail('nope') }
    const { outcome } = await deliverOne(() => thenable)
    expect(outcome.settlement).toMatchObject({ outcome: 'retry', error: 'nope' })
  })

  test('a payload that is not JSON is dead-lettered without calling the handler', async () => {
    let called = false
    const { outcome } = await deliverOne(
      () => {
        called = true
      },
      { payload: '{nope' },
    )
    expect([called, outcome.reason, outcome.message]).toEqual([false, 'invalid-payload', undefined])
  })

  test('a payload that fails the topic schema is dead-lettered with the issues', async () => {
    const { outcome } = await deliverOne(() => {}, {}, { schema: z.object({ n: z.string() }) })
    expect(outcome.reason).toBe('schema')
    expect(outcome.deadError).toMatch(/does not match the schema of topic "t"/)
  })

  test('a long error text is cut to 4 000 characters in the settlement', async () => {
    const { outcome } = await deliverOne(() => {
      throw new Error('x'.repeat(10_000))
    })
    expect(outcome.settlement.outcome === 'retry' && outcome.settlement.error.length).toBe(4_000)
  })
})
