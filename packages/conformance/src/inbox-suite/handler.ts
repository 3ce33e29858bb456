import { randomUUID } from 'node:crypto'
import { expect, test } from 'vitest'
import { Rollback } from '../publish-suite/suite.js'
import type { InboxSuite } from './inbox-harness.js'

/**
 * Inbox tests of the adapter's `inboxHandler`: the work runs in a real transaction (a publish in
 * it is accepted and commits with it), once per id; a throw rolls both back and is rethrown.
 */
export function registerInboxHandlerTests<TTx>(s: InboxSuite<TTx>): void {
  const { rows } = s
  const { publish, count } = s.suite
  test('inboxHandler: runs the work in a transaction of its own, once per id; a throw rolls it all back', async (t) => {
    const { ctx, outbox } = s.suite.opened
    if (!ctx.inboxHandler) return t.skip()
    let calls = 0
    const handler = ctx.inboxHandler(s.inbox(), async (message, tx) => {
      calls++
      const { id } = await publish(outbox, tx, { topic: 'inbox-handler', payload: { for: message.id } })
      if ((message as { fail?: boolean }).fail) throw new Rollback('the work failed')
      return id
    })
    const message = { id: randomUUID() }
    const first = await handler(message)
    expect(first.processed).toBe(true)
    expect(await handler(message)).toEqual({ processed: false })
    expect(calls).toBe(1)
    expect(await rows('billing', message.id)).toBe(1)
    expect(await count({ id: (first as { result: string }).result })).toBe(1)
    const failing = { id: randomUUID(), fail: true }
    await expect(handler(failing)).rejects.toBeInstanceOf(Rollback)
    expect(await rows('billing', failing.id)).toBe(0)
    expect(await count({ topic: 'inbox-handler' })).toBe(1)
    expect(calls).toBe(2)
  })
}
