import { expect } from 'vitest'

/**
 * What `stats --json` must say of the seeded table `table`: three pending messages (two of
 * `order.created` created 5 minutes ago and due 4 minutes ago), three dead ones, the delivered
 * one not counted, and the ages read from the database's clock.
 */
export function expectSeededStats(stats: Record<string, unknown>, table: string): void {
  expect(stats).toMatchObject({
    table,
    states: { pending: 3, processing: 0, dead: 3, delivered: null },
    dead: 3,
    topics: [
      { topic: 'email.send', pending: 1, dead: 2, oldestDueLagMs: null },
      { topic: 'order.created', pending: 2, dead: 0 },
      { topic: 'sms.send', pending: 0, dead: 1, oldestPendingAgeMs: null },
    ],
  })
  expect(stats.oldestPendingAgeMs).toBeGreaterThanOrEqual(300_000)
  expect(stats.oldestPendingAgeMs).toBeLessThan(330_000)
  expect(stats.oldestDueLagMs).toBeGreaterThanOrEqual(240_000)
  expect(stats.oldestDueLagMs).toBeLessThan(270_000)
}

/**
 * What `dead list --json` must say of the seeded table: the dead messages `newestFirst` (the
 * newest death first), the second one read back with its topic, attempts, error and payload.
 */
export function expectSeededDeadList(list: { id: string }[], newestFirst: (string | undefined)[]): void {
  expect(list.map((d) => d.id)).toEqual(newestFirst)
  expect(list[1]).toMatchObject({
    topic: 'email.send',
    attempts: 10,
    lastError: 'smtp 550: no such user',
    payload: { to: 'y@example.com' },
  })
}
