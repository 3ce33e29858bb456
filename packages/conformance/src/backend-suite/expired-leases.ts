import { expect, test } from 'vitest'
import { waitFor } from '../database.js'
import type { BackendSuite } from './suite.js'

/** Backend tests: a lapsed lease is claimable again; a row out of attempts is dead-lettered at claim. */
export function registerExpiredLeaseTests(suite: BackendSuite): void {
  const { insert, row, claim } = suite
  test('a lapsed lease makes the row claimable again, with the attempt counted', async () => {
    const [id] = await insert(1)
    const [c1] = await claim(1, { leaseMs: 300 })
    expect(c1!.attempts).toBe(1)
    expect(await claim(1)).toEqual([])
    const c2 = await waitFor(async () => (await claim(1))[0], {
      what: 'the lease to lapse',
      timeoutMs: 5_000,
    })
    expect(c2.id).toBe(id)
    expect(c2.attempts).toBe(2)
  })

  test('a row that used maxAttempts is dead-lettered at claim, not returned for delivery', async () => {
    const { sql, table } = suite.opened
    const [id] = await insert(1, { state: 'processing', attempts: 3 })
    await sql.update(table, id!, { lastError: 'boom' })
    const [c] = await claim(5, { maxAttempts: 3 })
    expect(c!.id).toBe(id)
    expect(c!.state).toBe('dead')
    expect(c!.attempts).toBe(3)
    const r = await row(id!)
    expect(r!.state).toBe('dead')
    expect(Number(r!.attempts)).toBe(3)
    expect(String(r!.last_error)).toMatch(/lease expired after attempt 3 of 3.*boom/)
    expect(await claim(5, { maxAttempts: 3 })).toEqual([])
  })
}
