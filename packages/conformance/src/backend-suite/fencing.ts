import { expect, test } from 'vitest'
import type { BackendSuite } from './suite.js'

/** Backend tests: settles are fenced by attempts and by state. */
export function registerFencingTests(suite: BackendSuite): void {
  const { insert, row, claim } = suite
  test('settles are fenced by attempts: a stale relay cannot overwrite a newer claim', async () => {
    const { sql, backend, outbox, table } = suite.opened
    const [id] = await insert(1)
    await claim(1, { leaseMs: 1 })
    await sql.update(table, id!, { availableInMs: -1000 })
    const [again] = await claim(1)
    expect(again!.attempts).toBe(2)
    for (const outcome of ['delivered', 'retry', 'dead'] as const) {
      const s =
        outcome === 'delivered'
          ? { id: id!, attempts: 1, outcome }
          : outcome === 'retry'
            ? { id: id!, attempts: 1, outcome, delayMs: 0, error: 'stale' }
            : { id: id!, attempts: 1, outcome, error: 'stale' }
      expect(await backend.settle({ table: outbox.table, keepDelivered: false, settlements: [s] })).toEqual(
        [],
      )
      const r = await row(id!)
      expect(r!.state).toBe('processing')
      expect(Number(r!.attempts)).toBe(2)
      expect(r!.last_error).toBeNull()
    }
    expect(
      await backend.settle({
        table: outbox.table,
        keepDelivered: false,
        settlements: [{ id: id!, attempts: 2, outcome: 'delivered' }],
      }),
    ).toEqual([id])
  })

  test('a settle after dead-letter at claim is fenced by state', async () => {
    const { backend, outbox } = suite.opened
    const [id] = await insert(1, { state: 'processing', attempts: 2 })
    await claim(1, { maxAttempts: 2 })
    expect((await row(id!))!.state).toBe('dead')
    expect(
      await backend.settle({
        table: outbox.table,
        keepDelivered: false,
        settlements: [{ id: id!, attempts: 2, outcome: 'delivered' }],
      }),
    ).toEqual([])
    expect((await row(id!))!.state).toBe('dead')
  })
}
