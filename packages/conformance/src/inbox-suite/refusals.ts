import { randomUUID } from 'node:crypto'
import { defineOutbox } from '@outboxkit/core'
import { expect, test } from 'vitest'
import { expectCode } from '../publish-suite/suite.js'
import type { InboxSuite } from './inbox-harness.js'

/** Inbox tests: what processOnce refuses, before any statement, writing nothing. */
export function registerInboxRefusalTests<TTx>(s: InboxSuite<TTx>): void {
  const { name, processOnce, rows } = s
  test('processOnce refuses every handle publish refuses (NOT_IN_TRANSACTION), runs nothing, writes nothing', async () => {
    const { ctx } = s.suite.opened
    const handles = await ctx.refusedHandles()
    expect(handles.length).toBeGreaterThan(0)
    let calls = 0
    for (const { label, handle } of handles) {
      const err = await expectCode(
        processOnce(s.inbox(), handle as TTx, { id: `refused-${label}` }, () => calls++),
        'NOT_IN_TRANSACTION',
      )
      expect(err.message, label).toContain(`[outboxkit] [${name}]`)
      expect(err.message, label).toContain('processOnce')
    }
    expect(calls).toBe(0)
    for (const { label } of handles) expect(await rows('billing', `refused-${label}`), label).toBe(0)
  })

  test('processOnce refuses a bad message, inbox or callback before any statement; the transaction stays usable', async () => {
    const { ctx } = s.suite.opened
    const id = randomUUID()
    let calls = 0
    // A synchronous driver (better-sqlite3) throws these synchronously, inside the transaction.
    const attempt = (fn: () => Promise<unknown>) => {
      try {
        return fn()
      } catch (err) {
        return Promise.reject(err)
      }
    }
    const result = await ctx.transaction(async (tx) => {
      const bad: unknown[] = [undefined, null, 'id', {}, { id: 5 }, { id: '' }, { id: 'x'.repeat(256) }]
      for (const message of bad) {
        await expectCode(
          attempt(() => processOnce(s.inbox(), tx, message as never, () => calls++)),
          'INVALID_MESSAGE',
        )
      }
      await expectCode(
        attempt(() => processOnce(defineOutbox() as never, tx, { id }, () => calls++)),
        'INVALID_CONFIG',
      )
      await expectCode(
        attempt(() => processOnce(s.inbox(), tx, { id }, undefined as never)),
        'INVALID_CONFIG',
      )
      // Nothing was sent: the transaction is still usable (PostgreSQL would refuse every statement
      // after a failed one), and the same id is processed now.
      return processOnce(s.inbox(), tx, { id }, () => 'after refusals')
    })
    expect(calls).toBe(0)
    expect(result).toEqual({ processed: true, result: 'after refusals' })
    expect(await rows('billing', id)).toBe(1)
  })

  test('processOnce takes an id of 255 characters and any text', async () => {
    const { ctx } = s.suite.opened
    const ids = ['é'.repeat(255), `Nats-Msg-Id ${randomUUID()} 'quoted' "double"`]
    for (const id of ids) {
      const r = await ctx.transaction((tx) => processOnce(s.inbox(), tx, { id }, () => true))
      expect(r.processed).toBe(true)
      expect(await rows('billing', id)).toBe(1)
    }
  })
}
