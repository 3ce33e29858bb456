import { expect, test } from 'vitest'
import { expectCode, type PublishSuite } from './suite.js'

/** Publish tests: handles that are not an open transaction are refused. */
export function registerRefusalTests<TTx>(suite: PublishSuite<TTx>): void {
  const { name, publish, publishMany, count } = suite
  test('refuses every handle that is not an open transaction, and writes nothing', async () => {
    const { ctx, outbox } = suite.opened
    const handles = await ctx.refusedHandles()
    expect(handles.length).toBeGreaterThan(0)
    for (const { label, handle } of handles) {
      const before = await count()
      const err = await expectCode(
        publish(outbox, handle as TTx, { topic: 'refused', payload: { label } }),
        'NOT_IN_TRANSACTION',
      )
      expect(err.message, label).toContain(`[outboxkit] [${name}]`)
      await expectCode(
        publishMany(outbox, handle as TTx, [{ topic: 'refused', payload: { label } }]),
        'NOT_IN_TRANSACTION',
      )
      expect(await count(), `${label} wrote a row`).toBe(before)
    }
    expect(await count({ topic: 'refused' })).toBe(0)
  })
}
