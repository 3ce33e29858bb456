// Overlapping claims: while a backlog lasts (the last claim came back full) the relay sends the
// next claim without waiting for the one in flight, as many as its free slots allow; otherwise one
// claim at a time. Either way it never asks for more rows than it has free slots. Logic of the
// relay only, so PostgreSQL alone.
import { waitFor } from '@outboxkit/conformance'
import type { OutboxBackend, Relay } from '@outboxkit/core'
import { describe, expect, test } from 'vitest'
import { messages, observeFor, useHarness } from './support/harness.js'

interface ClaimWatch {
  backend: OutboxBackend
  /** Most claims in flight at once. */
  maxInFlight: number
  claims: number
  /** Rows held by the relay plus the limits of the claims in flight, at each claim sent. */
  promised: number[]
  attach(relay: Relay): void
}

function watchClaims(inner: OutboxBackend): ClaimWatch {
  let inFlight = 0
  let limits = 0
  let relay: Relay | undefined
  const watch: ClaimWatch = {
    maxInFlight: 0,
    claims: 0,
    promised: [],
    attach(r) {
      relay = r
    },
    backend: {
      ...inner,
      async claim(request) {
        watch.claims++
        inFlight++
        limits += request.limit
        watch.maxInFlight = Math.max(watch.maxInFlight, inFlight)
        watch.promised.push((relay?.stats.inFlight ?? 0) + limits)
        try {
          return await inner.claim(request)
        } finally {
          inFlight--
          limits -= request.limit
        }
      },
    },
  }
  return watch
}

describe('overlapping claims', () => {
  const h = useHarness('postgres')

  /** A relay with 20 slots and 5-row claims, its claims watched, counting the messages handled. */
  async function watchedRelay(name: string, pollIntervalMs: number, orderedTopics: string[] = []) {
    const outbox = await h.outbox(name, { orderedTopics })
    const watch = watchClaims(h.backend())
    const counter = { handled: 0 }
    const relay = h.relay(outbox, {
      backend: watch.backend,
      handlers: { t: () => void counter.handled++ },
      concurrency: 20,
      batchSize: 5,
      pollIntervalMs,
      notify: false,
    })
    watch.attach(relay)
    return { outbox, watch, relay, counter }
  }

  test('with a backlog, the next claims go out while one is in flight, within the free slots', async () => {
    const { outbox, watch, relay, counter } = await watchedRelay('claims_backlog', 50)
    await h.publish(outbox, messages(200))
    await relay.start()
    await waitFor(async () => counter.handled >= 200 && (await h.count(outbox)) === 0, { what: 'the drain' })
    expect(watch.maxInFlight).toBeGreaterThanOrEqual(2)
    expect(watch.maxInFlight).toBeLessThanOrEqual(4) // 20 slots / 5 rows per claim
    expect(Math.max(...watch.promised)).toBeLessThanOrEqual(20)
    expect(counter.handled).toBe(200)
  })

  test('without a backlog (claims come back short), one claim at a time', async () => {
    const { outbox, watch, relay, counter } = await watchedRelay('claims_trickle', 20)
    await relay.start()
    for (let i = 0; i < 5; i++) {
      await h.publish(outbox, messages(3))
      await waitFor(() => counter.handled >= 3 * (i + 1), { what: `batch ${i + 1} handled` })
    }
    await observeFor(200) // idle polls
    expect(watch.claims).toBeGreaterThan(5)
    expect(watch.maxInFlight).toBe(1)
    expect(counter.handled).toBe(15)
  })

  test('a relay of an ordered topic claims one batch at a time, even with a backlog', async () => {
    const { outbox, watch, relay, counter } = await watchedRelay('claims_ordered', 50, ['t'])
    // 200 keys: every message is its key's head, so every claim comes back full.
    await h.publish(
      outbox,
      messages(200).map((m, i) => ({ ...m, key: `k${i}` })),
    )
    await relay.start()
    await waitFor(async () => counter.handled >= 200 && (await h.count(outbox)) === 0, { what: 'the drain' })
    expect(watch.claims).toBeGreaterThanOrEqual(40) // 200 rows / 5 per claim
    expect(watch.maxInFlight).toBe(1)
  })
})
