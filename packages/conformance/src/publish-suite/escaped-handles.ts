import { expect, test } from 'vitest'
import { expectCode, type PublishSuite, Rollback } from './suite.js'

/** Publish tests: a transaction handle kept after its transaction ended is refused. */
export function registerEscapedHandleTests<TTx>(suite: PublishSuite<TTx>): void {
  const { publish, publishMany, count } = suite
  test('refuses a transaction handle used after its transaction committed', async (t) => {
    const { ctx, outbox } = suite.opened
    if (ctx.undetectableEscapes?.afterCommit) t.skip()
    let escaped: TTx | undefined
    await ctx.transaction(async (tx) => {
      escaped = tx
    })
    await expectCode(publish(outbox, escaped as TTx, { topic: 'escaped', payload: 1 }), 'NOT_IN_TRANSACTION')
    await expectCode(
      publishMany(outbox, escaped as TTx, [{ topic: 'escaped', payload: 1 }]),
      'NOT_IN_TRANSACTION',
    )
    expect(await count({ topic: 'escaped' })).toBe(0)
  })

  test('refuses a transaction handle used after its transaction rolled back', async (t) => {
    const { ctx, outbox } = suite.opened
    if (ctx.undetectableEscapes?.afterRollback) t.skip()
    let escaped: TTx | undefined
    await ctx
      .transaction(async (tx) => {
        escaped = tx
        throw new Rollback('roll back')
      })
      .catch((e) => {
        if (!(e instanceof Rollback)) throw e
      })
    await expectCode(
      publish(outbox, escaped as TTx, { topic: 'escaped-rb', payload: 1 }),
      'NOT_IN_TRANSACTION',
    )
    expect(await count({ topic: 'escaped-rb' })).toBe(0)
  })
}
