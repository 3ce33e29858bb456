import { expect, test } from 'vitest'
import type { BackendSuite } from './suite.js'

/** Backend tests: settle deletes or keeps delivered rows, reschedules retries, dead-letters. */
export function registerSettleTests(suite: BackendSuite): void {
  const { insert, row, claim } = suite
  test('settle: delivered deletes, or keeps with state delivered', async () => {
    const { backend, outbox } = suite.opened
    const ids = await insert(2)
    const [a, b] = await claim(2)
    expect(
      await backend.settle({
        table: outbox.table,
        keepDelivered: false,
        settlements: [{ id: a!.id, attempts: 1, outcome: 'delivered' }],
      }),
    ).toEqual([a!.id])
    expect(await row(a!.id)).toBeUndefined()
    await backend.settle({
      table: outbox.table,
      keepDelivered: true,
      settlements: [{ id: b!.id, attempts: 1, outcome: 'delivered' }],
    })
    expect((await row(b!.id))!.state).toBe('delivered')
    expect(ids).toHaveLength(2)
  })

  test('settle: retry reschedules with the error, dead dead-letters with the error, in one batch', async () => {
    const { backend, outbox } = suite.opened
    await insert(3)
    const [a, b, c] = await claim(3)
    const applied = await backend.settle({
      table: outbox.table,
      keepDelivered: false,
      settlements: [
        { id: a!.id, attempts: 1, outcome: 'retry', delayMs: 45_000, error: 'try later' },
        { id: b!.id, attempts: 1, outcome: 'dead', error: 'give up' },
        { id: c!.id, attempts: 1, outcome: 'delivered' },
      ],
    })
    expect(applied.sort()).toEqual([a!.id, b!.id, c!.id].sort())
    const ra = await row(a!.id)
    expect(ra!.state).toBe('pending')
    expect(ra!.last_error).toBe('try later')
    expect(Number(ra!.due_in_ms)).toBeGreaterThan(40_000)
    const rb = await row(b!.id)
    expect(rb!.state).toBe('dead')
    expect(rb!.last_error).toBe('give up')
    expect(await row(c!.id)).toBeUndefined()
  })
}
