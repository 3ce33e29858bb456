import { expect, test } from 'vitest'
import type { BackendSuite } from './suite.js'

/** Backend tests: purge deletes terminal rows only; redrive revives dead rows. */
export function registerPurgeRedriveTests(suite: BackendSuite): void {
  const { insert, row } = suite
  test('purge deletes terminal rows only; redrive revives dead rows with attempts reset', async () => {
    const { sql, backend, outbox, table } = suite.opened
    const dead = await insert(3, { state: 'dead', attempts: 10 })
    const delivered = await insert(2, { state: 'delivered' })
    const pending = await insert(1)
    await sql.update(table, dead[2]!, { topic: 'x' })
    expect(await backend.redrive({ table: outbox.table, ids: [dead[0]!] })).toBe(1)
    const r = await row(dead[0]!)
    expect(r!.state).toBe('pending')
    expect(Number(r!.attempts)).toBe(0)
    expect(await backend.redrive({ table: outbox.table, topics: ['x'] })).toBe(1)
    expect(await backend.purge({ table: outbox.table, states: ['delivered'], olderThanMs: 3_600_000 })).toBe(
      0,
    )
    expect(await backend.purge({ table: outbox.table, states: ['delivered'], olderThanMs: 0 })).toBe(2)
    expect(await backend.purge({ table: outbox.table, states: ['dead', 'delivered'], olderThanMs: 0 })).toBe(
      1,
    )
    const left = await sql.rows(table)
    expect(left.map((l) => l.id).sort()).toEqual([dead[0], dead[2], pending[0]].sort())
    expect(delivered).toHaveLength(2)
  })
}
