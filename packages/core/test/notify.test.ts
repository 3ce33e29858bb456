import { waitFor } from '@outboxkit/conformance'
import type { Outbox } from '@outboxkit/core'
import { afterAll, afterEach, describe, expect, test } from 'vitest'
import { Harness, nextEvent } from './support/harness.js'

const h = new Harness()
afterEach(() => h.cleanup())
afterAll(() => h.close())

/** Backends LISTENing on `channel`, from pg_stat_activity. */
async function listeners(channel: string): Promise<{ pid: number; state: string }[]> {
  return h.query(`SELECT pid, state FROM pg_stat_activity WHERE query = $1 ORDER BY backend_start`, [
    `LISTEN "${channel}"`,
  ])
}

const FAR_BELOW_POLL_MS = 5_000

/** A started relay on `outbox` handling `t`, once its start-up claim is done (returned with it). */
async function startedIdle(outbox: Outbox<any>, options: { pollIntervalMs: number; notify?: false }) {
  const relay = h.relay(outbox, { handlers: { t: () => {} }, ...options })
  const firstClaim = nextEvent(relay, 'claimed')
  await relay.start()
  return { relay, firstClaim: await firstClaim }
}

describe('NOTIFY wake-up and poll fallback', () => {
  test('with a 60 s poll, a message published after start is delivered within a few seconds (the wake)', async () => {
    const outbox = await h.outbox('wake')
    const { relay, firstClaim } = await startedIdle(outbox, { pollIntervalMs: 60_000 })
    expect(firstClaim.count).toBe(0) // the start-up claim is done: only a wake can claim again
    expect(await listeners(outbox.channel)).toHaveLength(1)
    const delivered = nextEvent(relay, 'delivered', { timeoutMs: FAR_BELOW_POLL_MS })
    const t0 = Date.now()
    const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
    expect((await delivered).message.id).toBe(p!.id)
    expect(Date.now() - t0).toBeLessThan(FAR_BELOW_POLL_MS)
  })

  test('with notify off on the relay, polling alone still delivers (and nothing LISTENs)', async () => {
    const outbox = await h.outbox('poll')
    const { relay } = await startedIdle(outbox, { pollIntervalMs: 100, notify: false })
    expect(await listeners(outbox.channel)).toEqual([])
    const delivered = nextEvent(relay, 'delivered', { timeoutMs: 5_000 })
    const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
    expect((await delivered).message.id).toBe(p!.id)
  })

  test('with defineOutbox({ notify: false }) and a 60 s poll: not delivered within 1.5 s, delivered after wake()', async () => {
    const outbox = await h.outbox('silent', { notify: false })
    const { relay } = await startedIdle(outbox, { pollIntervalMs: 60_000 })
    const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
    // The negative half: no wake was sent, so no claim may find it for 1.5 s.
    await expect(nextEvent(relay, 'claimed', { timeoutMs: 1_500 })).rejects.toThrow(/timed out/)
    expect(await h.row(outbox, p!.id)).toMatchObject({ state: 'pending', attempts: 0 })
    const delivered = nextEvent(relay, 'delivered', { timeoutMs: 5_000 })
    relay.wake()
    expect((await delivered).message.id).toBe(p!.id)
  })
})

describe('listener reconnect', () => {
  test('a terminated LISTEN connection is reported, re-established, and wakes work again', async () => {
    const outbox = await h.outbox('reconnect')
    const { relay } = await startedIdle(outbox, { pollIntervalMs: 60_000 })
    const [before] = await listeners(outbox.channel)
    expect(before).toBeDefined()

    const listenError = nextEvent(relay, 'error', { where: (e) => e.during === 'listen' })
    // With a 60 s poll, the next claim is the one the reconnection asks for.
    const reconnectClaim = nextEvent(relay, 'claimed')
    const [{ terminated }] = (await h.query(`SELECT pg_terminate_backend($1) AS terminated`, [
      before!.pid,
    ])) as [{ terminated: boolean }]
    expect(terminated).toBe(true)
    expect((await listenError).error).toBeInstanceOf(Error)

    const after = await waitFor(
      async () => (await listeners(outbox.channel)).find((l) => l.pid !== before!.pid && l.state === 'idle'),
      { timeoutMs: 10_000, what: 'a new LISTEN connection' },
    )
    expect(after.pid).not.toBe(before!.pid)
    await waitFor(async () => (await listeners(outbox.channel)).length === 1, {
      what: 'the old LISTEN backend to go',
    })
    await reconnectClaim // so the message below can only be found through a wake

    const delivered = nextEvent(relay, 'delivered', { timeoutMs: FAR_BELOW_POLL_MS })
    const [p] = await h.publish(outbox, [{ topic: 't', payload: {} }])
    expect((await delivered).message.id).toBe(p!.id)
  })
})
