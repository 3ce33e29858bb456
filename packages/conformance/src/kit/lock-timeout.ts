import { isOutboxError, migrate, type Outbox, type OutboxBackend } from '@outboxkit/core'
import { expect } from 'vitest'
import { failure } from './outcomes.js'

/** What {@link expectTimeoutBehindLock} runs on. */
export interface TimeoutBehindLock {
  outbox: Outbox
  /** A backend with `commandTimeoutMs` set (500 ms in the pooler tests). */
  backend: OutboxBackend
  /** How many messages `seed` commits. */
  seeded: number
  /** Commits `seeded` messages to the outbox. */
  seed(): Promise<void>
  /** Takes `LOCK TABLE <name> IN ACCESS EXCLUSIVE MODE` in an open transaction on another connection; returns its release (rollback). */
  lockTable(name: string): Promise<() => Promise<void>>
}

/**
 * commandTimeoutMs: statements work (migrate, a claim of every seeded row, its settle), and a
 * claim or migrate stuck behind a lock another connection holds fails with TIMEOUT within the
 * bound (3 s for a 500 ms timeout); once the lock is gone the backend claims again (nothing left).
 */
export async function expectTimeoutBehindLock(check: TimeoutBehindLock): Promise<void> {
  const { outbox, backend: b } = check
  const request = { table: outbox.table, topics: ['t'], limit: 100, leaseMs: 30_000, maxAttempts: 10 }
  await migrate(outbox, b)
  await check.seed()
  const claimed = await b.claim(request)
  expect(claimed).toHaveLength(check.seeded)
  const settlements = claimed.map((c) => ({
    id: c.id,
    attempts: c.attempts,
    outcome: 'delivered' as const,
  }))
  expect(await b.settle({ table: outbox.table, settlements, keepDelivered: false })).toHaveLength(
    check.seeded,
  )

  const release = await check.lockTable(outbox.table.name)
  try {
    const stuck = await failure(() => b.claim(request))
    expect(isOutboxError(stuck.error, 'TIMEOUT'), String(stuck.error)).toBe(true)
    expect(stuck.ms).toBeLessThan(3_000)
    const migrating = await failure(() => migrate(outbox, b))
    expect(isOutboxError(migrating.error, 'TIMEOUT'), String(migrating.error)).toBe(true)
  } finally {
    await release()
  }
  expect(await b.claim(request)).toEqual([])
}
