import { expect, test } from 'vitest'
import type { PublishSuite } from './suite.js'

/** Publish tests: concurrent transactions each publish exactly once. */
export function registerConcurrencyTests<TTx>(suite: PublishSuite<TTx>): void {
  const { publish, count } = suite
  test('many concurrent transactions each publish exactly once', async () => {
    const { ctx, outbox } = suite.opened
    const n = ctx.concurrentTransactions ?? 20
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        ctx.transaction((tx) => publish(outbox, tx, { topic: 'concurrent', payload: { i } })),
      ),
    )
    expect(new Set(results.map((r) => r.id)).size).toBe(n)
    expect(await count({ topic: 'concurrent' })).toBe(n)
  })
}
