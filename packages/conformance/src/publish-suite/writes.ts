import { expect, test } from 'vitest'
import { type PublishSuite, Rollback } from './suite.js'

/** Publish tests: a committed publish writes its row, a rolled-back one leaves nothing. */
export function registerWriteTests<TTx>(suite: PublishSuite<TTx>): void {
  const { publish, count, rowOf } = suite
  test('a committed publish writes one pending row with every column', async () => {
    const { ctx, outbox } = suite.opened
    const payload = { orderId: 'o-1', total: 12.5, items: [1, 2], nested: { ok: true } }
    const result = await ctx.transaction((tx) =>
      publish(outbox, tx, {
        topic: 'order.created',
        payload,
        key: 'o-1',
        headers: { tenant: 't1' },
        dedupKey: 'commit-1',
      }),
    )
    expect(result.published).toBe(true)
    expect(result.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    const row = await rowOf(result.id)
    expect(row).toBeDefined()
    expect(row!.topic).toBe('order.created')
    expect(row!.key).toBe('o-1')
    expect(JSON.parse(row!.payload_text as string)).toEqual(payload)
    expect(row!.state).toBe('pending')
    expect(Number(row!.attempts)).toBe(0)
    expect(row!.dedup_key).toBe('commit-1')
    expect(row!.last_error).toBeNull()
    expect(JSON.parse(row!.headers_text)).toEqual({ tenant: 't1' })
  })

  test('a rolled-back publish leaves nothing', async () => {
    const { ctx, outbox } = suite.opened
    let id = ''
    await expect(
      ctx.transaction(async (tx) => {
        id = (await publish(outbox, tx, { topic: 'order.created', payload: { n: 1 } })).id
        throw new Rollback('roll back')
      }),
    ).rejects.toThrow('roll back')
    expect(id).not.toBe('')
    expect(await count({ id })).toBe(0)
  })
}
