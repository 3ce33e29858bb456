// `maxPendingOutcomes`: a slot is freed when its handler returns, while its outcome waits for the
// batched settle, up to N such outcomes. Held settles make the bound observable. Logic of the
// relay only, so PostgreSQL alone.
import { waitFor } from '@outboxkit/conformance'
import { describe, expect, test } from 'vitest'
import { deferred, messages, observeFor, useHarness, wrapBackend } from './support/harness.js'

describe('maxPendingOutcomes', () => {
  const h = useHarness('postgres')

  async function stallWithHeldSettles(maxPendingOutcomes: number | undefined) {
    const outbox = await h.outbox(`pending_${maxPendingOutcomes ?? 'default'}`)
    const release = deferred()
    const { backend, calls } = wrapBackend(h.backend(), { beforeSettle: () => release.promise })
    let handled = 0
    let running = 0
    let maxRunning = 0
    const relay = h.relay(outbox, {
      backend,
      handlers: {
        t: async () => {
          handled++
          running++
          maxRunning = Math.max(maxRunning, running)
          await new Promise((r) => setImmediate(r))
          running--
        },
      },
      concurrency: 2,
      batchSize: 2,
      ...(maxPendingOutcomes === undefined ? {} : { maxPendingOutcomes }),
      pollIntervalMs: 50,
      notify: false,
    })
    await h.publish(outbox, messages(20))
    await relay.start()
    return { outbox, relay, release, calls, state: () => ({ handled, maxRunning }) }
  }

  test('default (0): a slot stays taken until its outcome is written, so held settles stop the relay at `concurrency` handlers', async () => {
    const run = await stallWithHeldSettles(undefined)
    await waitFor(() => run.calls.settle > 0 && run.state().handled >= 2, { what: 'the first settle' })
    await observeFor(400) // a window in which no further handler may start
    expect(run.state().handled).toBe(2)
    expect(await h.count(run.outbox, { state: 'processing' })).toBe(2)
    run.release.resolve()
    await waitFor(async () => (await h.count(run.outbox)) === 0, { what: 'the drain after the release' })
  })

  test('N = 3: handlers go on until `concurrency + N` outcomes wait, never more than `concurrency` at once, then all are settled', async () => {
    const run = await stallWithHeldSettles(3)
    await waitFor(() => run.state().handled >= 5, { what: 'five handler calls with settles held' })
    await observeFor(400) // a window in which no sixth handler may start
    expect(run.state().handled).toBe(5)
    expect(run.state().maxRunning).toBeLessThanOrEqual(2)
    expect(await h.count(run.outbox, { state: 'processing' })).toBe(5)
    run.release.resolve()
    await waitFor(async () => (await h.count(run.outbox)) === 0, { what: 'the drain after the release' })
    expect(run.state().handled).toBe(20)
    expect(run.state().maxRunning).toBeLessThanOrEqual(2)
  })

  test('refuses a negative or fractional value with INVALID_CONFIG', async () => {
    const outbox = await h.outbox('pending_bad')
    for (const bad of [-1, 1.5]) {
      expect(() => h.relay(outbox, { handlers: { t: () => {} }, maxPendingOutcomes: bad })).toThrow(
        expect.objectContaining({ code: 'INVALID_CONFIG' }),
      )
    }
  })
})
