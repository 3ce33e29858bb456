import { expect, test } from 'vitest'
import type { BackendSuite } from './suite.js'

/** Backend tests: extendLease pushes the lease of a live claim only. */
export function registerExtendLeaseTests(suite: BackendSuite): void {
  const { insert, row, claim } = suite
  test('extendLease pushes the lease of a live claim only', async () => {
    const { backend, outbox } = suite.opened
    if (!backend.extendLease) return
    const [id] = await insert(1)
    await claim(1, { leaseMs: 1_000 })
    expect(
      await backend.extendLease({ table: outbox.table, leaseMs: 60_000, rows: [{ id: id!, attempts: 1 }] }),
    ).toEqual([id])
    expect(Number((await row(id!))!.due_in_ms)).toBeGreaterThan(50_000)
    expect(
      await backend.extendLease({ table: outbox.table, leaseMs: 60_000, rows: [{ id: id!, attempts: 7 }] }),
    ).toEqual([])
  })
}
