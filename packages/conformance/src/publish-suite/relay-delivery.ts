import { createRelay, type DeliveredMessage } from '@outboxkit/core'
import { expect, test } from 'vitest'
import { waitFor } from '../database.js'
import { type PublishSuite, Rollback } from './suite.js'

/** Publish tests: a relay delivers committed messages intact, never rolled-back ones. */
export function registerRelayDeliveryTests<TTx>(suite: PublishSuite<TTx>): void {
  const { publish, publishMany, count } = suite
  test('a relay delivers committed messages with payload, key and headers intact, never rolled-back ones', async () => {
    const { ctx, outbox } = suite.opened
    const deliveries: DeliveredMessage[] = []
    const committed = await ctx.transaction((tx) =>
      publishMany(outbox, tx, [
        { topic: 'e2e', payload: { n: 1, s: 'ü' }, key: 'agg-1', headers: { a: 'b' } },
        { topic: 'e2e', payload: [1, 'two'] },
      ]),
    )
    await ctx
      .transaction(async (tx) => {
        await publish(outbox, tx, { topic: 'e2e', payload: 'rolled back' })
        throw new Rollback('no')
      })
      .catch(() => {})
    const relay = createRelay(outbox, {
      backend: ctx.backend,
      pollIntervalMs: 50,
      handlers: { e2e: async (m: DeliveredMessage) => void deliveries.push(m) },
    })
    await relay.start()
    try {
      await waitFor(() => deliveries.length >= 2, { what: 'two deliveries' })
      // The relay keeps polling: if the rolled-back message existed it would be claimed now.
      await waitFor(async () => (await count({ topic: 'e2e' })) === 0, {
        what: 'the e2e rows to be deleted',
      })
    } finally {
      await relay.stop()
    }
    expect(deliveries.map((d) => d.id).sort()).toEqual(committed.map((c) => c.id).sort())
    const first = deliveries.find((d) => d.id === committed[0]!.id)!
    expect(first.payload).toEqual({ n: 1, s: 'ü' })
    expect(first.key).toBe('agg-1')
    expect(first.headers).toEqual({ a: 'b' })
    expect(first.attempts).toBe(1)
    expect(first.createdAt).toBeInstanceOf(Date)
    expect(deliveries.some((d) => d.payload === 'rolled back')).toBe(false)
  })
}
