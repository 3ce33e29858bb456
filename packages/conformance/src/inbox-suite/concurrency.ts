import { randomUUID } from 'node:crypto'
import { expect, test } from 'vitest'
import { deferred } from '../kit/waits.js'
import { Rollback } from '../publish-suite/suite.js'
import type { InboxSuite } from './inbox-harness.js'

/**
 * Inbox tests: two transactions with one id. The second starts after the first wrote its inbox
 * row (the first's callback is running), so it meets that row uncommitted (it waits on it where
 * transactions run at once) or committed (where they take turns): either way exactly one runs.
 */
export function registerInboxConcurrencyTests<TTx>(s: InboxSuite<TTx>): void {
  const { processOnce, rows } = s
  const race = async (firstCommits: boolean) => {
    const { ctx } = s.suite.opened
    const message = { id: randomUUID() }
    const inFirst = deferred()
    const release = deferred()
    const calls: string[] = []
    const first = ctx
      .transaction((tx) =>
        processOnce(s.inbox(), tx, message, async () => {
          calls.push('first')
          inFirst.resolve()
          await release.promise
          if (!firstCommits) throw new Rollback('first rolls back')
        }),
      )
      .catch((err: unknown) => err)
    await inFirst.promise
    const second = ctx.transaction((tx) => processOnce(s.inbox(), tx, message, () => calls.push('second')))
    release.resolve()
    const [a, b] = await Promise.all([first, second])
    return { message, calls, a, b }
  }

  test('two transactions with one id, the first commits: only the first runs the callback', async () => {
    const { message, calls, a, b } = await race(true)
    expect(a).toEqual({ processed: true, result: undefined })
    expect(b).toEqual({ processed: false })
    expect(calls).toEqual(['first'])
    expect(await rows('billing', message.id)).toBe(1)
  })

  test('two transactions with one id, the first rolls back: the second runs the callback', async () => {
    const { message, calls, a, b } = await race(false)
    expect(a).toBeInstanceOf(Rollback)
    expect(b).toEqual({ processed: true, result: 2 })
    expect(calls).toEqual(['first', 'second'])
    expect(await rows('billing', message.id)).toBe(1)
  })

  test('many concurrent deliveries of one id: exactly one runs the callback', async () => {
    const { ctx } = s.suite.opened
    const message = { id: randomUUID() }
    const n = Math.min(ctx.concurrentTransactions ?? 10, 10)
    let calls = 0
    const results = await Promise.all(
      Array.from({ length: n }, () =>
        ctx.transaction((tx) =>
          processOnce(s.inbox(), tx, message, async () => {
            calls++
          }),
        ),
      ),
    )
    expect(calls).toBe(1)
    expect(results.filter((r) => r.processed)).toHaveLength(1)
    expect(await rows('billing', message.id)).toBe(1)
  })
}
