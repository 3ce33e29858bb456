import { expect, test } from 'vitest'
import type { PublishSuite } from './suite.js'

/** Publish tests: dedupKey makes a second publish a no-op; delayMs sets available_at. */
export function registerDedupDelayTests<TTx>(suite: PublishSuite<TTx>): void {
  const { publish, publishMany, count, rowOf } = suite
  test('dedupKey: a second publish with the same key is a no-op returning the first id', async () => {
    const { ctx, outbox } = suite.opened
    const first = await ctx.transaction((tx) =>
      publish(outbox, tx, { topic: 'dedup', payload: 1, dedupKey: 'dd-1' }),
    )
    const second = await ctx.transaction((tx) =>
      publish(outbox, tx, { topic: 'dedup', payload: 2, dedupKey: 'dd-1' }),
    )
    expect(first.published).toBe(true)
    expect(second).toEqual({ id: first.id, published: false })
    const batch = await ctx.transaction((tx) =>
      publishMany(outbox, tx, [
        { topic: 'dedup', payload: 3, dedupKey: 'dd-2' },
        { topic: 'dedup', payload: 4, dedupKey: 'dd-1' },
        { topic: 'dedup', payload: 5, dedupKey: 'dd-2' },
      ]),
    )
    expect(batch.map((r) => r.published)).toEqual([true, false, false])
    expect(batch[1]!.id).toBe(first.id)
    expect(batch[2]!.id).toBe(batch[0]!.id)
    expect(await count({ topic: 'dedup' })).toBe(2)
  })

  test('delayMs: available_at is delayMs after now() of the database', async () => {
    const { ctx, outbox } = suite.opened
    const { id } = await ctx.transaction((tx) =>
      publish(outbox, tx, { topic: 'delay', payload: 1, delayMs: 60_000 }),
    )
    const r = await rowOf(id)
    expect(r!.delay_ms).toBeGreaterThanOrEqual(59_900)
    expect(r!.delay_ms).toBeLessThanOrEqual(60_100)
  })
}
