import { expect, test } from 'vitest'
import type { PublishSuite } from './suite.js'

/** Publish tests: publishMany writes in order, all or nothing. */
export function registerPublishManyTests<TTx>(suite: PublishSuite<TTx>): void {
  const { publishMany, count } = suite
  test('publishMany writes all messages in order, in one statement', async () => {
    const { ctx, sql, outbox, table } = suite.opened
    const msgs = Array.from({ length: 7 }, (_, i) => ({ topic: 'many', payload: { i }, key: `k${i}` }))
    const results = await ctx.transaction((tx) => publishMany(outbox, tx, msgs))
    expect(results).toHaveLength(7)
    expect(results.every((r) => r.published)).toBe(true)
    const sorted = [...results.map((r) => r.id)].sort()
    expect(results.map((r) => r.id)).toEqual(sorted)
    const rows = await sql.rows(table, { topic: 'many' })
    expect(rows.map((r) => Number(JSON.parse(r.payload_text).i))).toEqual([0, 1, 2, 3, 4, 5, 6])
    expect(rows.map((r) => r.key)).toEqual(msgs.map((m) => m.key))
    expect(rows.map((r) => r.id)).toEqual(results.map((r) => r.id))
    expect(await ctx.transaction((tx) => publishMany(outbox, tx, []))).toEqual([])
  })

  test('publishMany is all or nothing: one invalid message writes none', async () => {
    const { ctx, outbox } = suite.opened
    const msgs = [
      { topic: 'atomic', payload: 1 },
      { topic: 'atomic', payload: { bad: 10n } },
      { topic: 'atomic', payload: 3 },
    ]
    await expect(ctx.transaction((tx) => publishMany(outbox, tx, msgs as never))).rejects.toMatchObject({
      code: 'INVALID_MESSAGE',
    })
    expect(await count({ topic: 'atomic' })).toBe(0)
  })
}
