import { randomUUID } from 'node:crypto'
import { expect, test } from 'vitest'
import { Rollback } from '../publish-suite/suite.js'
import type { InboxSuite } from './inbox-harness.js'

/** Inbox tests: the first delivery runs the callback, a redelivery skips it, a throw rolls the row back. */
export function registerOnceTests<TTx>(s: InboxSuite<TTx>): void {
  const { processOnce, rows } = s
  test('processOnce: the first delivery runs the callback; a redelivery skips it', async () => {
    const { ctx } = s.suite.opened
    const message = { id: randomUUID() }
    let calls = 0
    const first = await ctx.transaction((tx) =>
      processOnce(s.inbox(), tx, message, async () => {
        calls++
        return { invoice: 7 }
      }),
    )
    expect(first).toEqual({ processed: true, result: { invoice: 7 } })
    expect(await rows('billing', message.id)).toBe(1)
    const second = await ctx.transaction((tx) => processOnce(s.inbox(), tx, message, () => calls++))
    expect(second).toEqual({ processed: false })
    expect(calls).toBe(1)
    expect(await rows('billing', message.id)).toBe(1)
  })

  test('processOnce: twice in one transaction runs once; another consumer runs its own', async () => {
    const { ctx } = s.suite.opened
    const message = { id: `order-${randomUUID()}` }
    const calls: string[] = []
    const results = await ctx.transaction(async (tx) => [
      await processOnce(s.inbox(), tx, message, () => calls.push('billing 1')),
      await processOnce(s.inbox(), tx, message, () => calls.push('billing 2')),
      await processOnce(s.other(), tx, message, () => calls.push('shipping')),
    ])
    expect(results.map((r) => r.processed)).toEqual([true, false, true])
    expect(calls).toEqual(['billing 1', 'shipping'])
    expect(await rows('billing', message.id)).toBe(1)
    expect(await rows('shipping', message.id)).toBe(1)
  })

  test('processOnce: a callback that throws rolls the inbox row back with the transaction; the next delivery runs it', async () => {
    const { ctx } = s.suite.opened
    const message = { id: randomUUID() }
    const boom = new Rollback('handler failed')
    const failed = await ctx
      .transaction((tx) =>
        processOnce(s.inbox(), tx, message, async () => {
          throw boom
        }),
      )
      .catch((err: unknown) => err)
    expect(failed).toBe(boom)
    expect(await rows('billing', message.id)).toBe(0)
    const retried = await ctx.transaction((tx) => processOnce(s.inbox(), tx, message, () => 'second'))
    expect(retried).toEqual({ processed: true, result: 'second' })
    expect(await rows('billing', message.id)).toBe(1)
  })

  test('processOnce: a transaction rolled back after the callback leaves no row (the work and the record go together)', async () => {
    const { ctx } = s.suite.opened
    const message = { id: randomUUID() }
    await ctx
      .transaction(async (tx) => {
        expect((await processOnce(s.inbox(), tx, message, () => 1)).processed).toBe(true)
        throw new Rollback('later step failed')
      })
      .catch(() => {})
    expect(await rows('billing', message.id)).toBe(0)
  })
}
