import { expect, test } from 'vitest'
import { type PublishSuite, Rollback } from './suite.js'

/** Publish tests: a rolled-back savepoint removes its messages only. */
export function registerSavepointTests<TTx>(suite: PublishSuite<TTx>): void {
  const { publish, count } = suite
  test('rolling back a savepoint removes its messages; the outer commit keeps the rest', async (t) => {
    const { ctx, outbox } = suite.opened
    if (!ctx.savepoint) t.skip()
    const savepoint = ctx.savepoint!
    const ids = await ctx.transaction(async (tx) => {
      const outer = await publish(outbox, tx, { topic: 'sp', payload: 'outer' })
      let inner = ''
      await savepoint(tx, async (stx) => {
        inner = (await publish(outbox, stx, { topic: 'sp', payload: 'inner' })).id
        throw new Rollback('savepoint')
      }).catch((e) => {
        if (!(e instanceof Rollback)) throw e
      })
      const kept = await savepoint(tx, (stx) => publish(outbox, stx, { topic: 'sp', payload: 'kept' }))
      return { outer: outer.id, inner, kept: kept.id }
    })
    expect(await count({ id: ids.outer })).toBe(1)
    expect(await count({ id: ids.inner })).toBe(0)
    expect(await count({ id: ids.kept })).toBe(1)
  })
}
