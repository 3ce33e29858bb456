import { expect, test } from 'vitest'
import { waitFor } from '../database.js'
import type { BackendSuite } from './suite.js'

/** Backend tests: listen wakes on a NOTIFY sent by a committed transaction. */
export function registerListenTests(suite: BackendSuite): void {
  test('listen wakes on a NOTIFY sent by a committed transaction', async (t) => {
    const { ctx, dialect, backend, outbox } = suite.opened
    // No listen on this backend (MySQL has no NOTIFY): the relay polls, and the docs say so.
    if (!ctx.supportsListen) t.skip()
    expect(backend.listen, 'supportsListen is set, so backend.listen must exist').toBeTypeOf('function')
    if (dialect !== 'postgres' && !ctx.wake) {
      throw new Error(`[outboxkit] [conformance] supportsListen on ${dialect} needs BackendContext.wake`)
    }
    let wakes = 0
    let connected = false
    const sub = await backend.listen!(outbox.channel, {
      onWake: () => wakes++,
      onError: () => {},
      onConnect: () => {
        connected = true
      },
    })
    try {
      await waitFor(() => connected, { what: 'the LISTEN connection' })
      if (ctx.wake) await ctx.wake(outbox)
      else await ctx.inspect(`SELECT pg_notify($1, '')`, [outbox.channel])
      await waitFor(() => wakes > 0, { what: 'a wake-up' })
    } finally {
      await sub.close()
    }
  })
}
