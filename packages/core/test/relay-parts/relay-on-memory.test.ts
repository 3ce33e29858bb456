import { memoryBackend } from '@outboxkit/conformance'
import { describe, expect, test } from 'vitest'
import { createRelay, defineOutbox, isOutboxError, type Relay, type RelayOptions } from '../../src/index.js'

const outbox = defineOutbox({ table: 'memory_outbox' })

/** Resolves when `relay` has emitted `count` events of `name`, or fails after 5 s. */
function events<
  K extends 'delivered' | 'retried' | 'deadLettered' | 'error' | 'claimed' | 'listenUnavailable',
>(relay: Relay, name: K, count: number): Promise<unknown[]> {
  const seen: unknown[] = []
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`only ${seen.length} of ${count} ${name} events in 5 s`)),
      5_000,
    )
    relay.on(name, (e) => {
      seen.push(e)
      if (seen.length === count) {
        clearTimeout(timer)
        resolve(seen)
      }
    })
  })
}

function start(
  options: Partial<RelayOptions<typeof outbox>> & Pick<RelayOptions<typeof outbox>, 'handlers'>,
) {
  const backend = memoryBackend()
  void backend.migrate(outbox)
  const relay = createRelay(outbox, { backend, pollIntervalMs: 20, telemetry: false, ...options })
  return { backend, relay }
}

describe('the relay wired from its parts, on the in-memory backend', () => {
  test('delivers every message once, in batches bounded by concurrency, and leaves the table empty', async () => {
    const seen: string[] = []
    const { backend, relay } = start({
      concurrency: 8,
      batchSize: 4,
      handlers: { t: (m) => void seen.push(m.id) },
    })
    const ids = backend.publish(...Array.from({ length: 50 }, (_, i) => ({ topic: 't', payload: { i } })))
    const claimed: number[] = []
    relay.on('claimed', ({ limit }) => claimed.push(limit))
    const done = events(relay, 'delivered', 50)
    await relay.start()
    await done
    await relay.stop()
    expect(seen.sort()).toEqual(ids.sort())
    expect(backend.rows.size).toBe(0)
    expect(Math.max(...claimed)).toBeLessThanOrEqual(4)
    expect(relay.stats).toMatchObject({ delivered: 50, claimed: 50, inFlight: 0 })
    expect(backend.closed).toBe(1)
  })

  test('a failing handler is retried after its backoff, then delivered; attempts count', async () => {
    const attempts: number[] = []
    const { backend, relay } = start({
      retry: { baseMs: 5, maxMs: 5, jitter: 0 },
      handlers: {
        t: (m) => {
          attempts.push(m.attempts)
          if (m.attempts < 3) throw new Error('not yet')
        },
      },
    })
    backend.publish({ topic: 't' })
    const done = events(relay, 'delivered', 1)
    await relay.start()
    await done
    await relay.stop()
    expect(attempts).toEqual([1, 2, 3])
    expect(relay.stats).toMatchObject({ retried: 2, delivered: 1 })
  })

  test('claim and settle failures are survived: reported, backed off, and nothing is lost', async () => {
    const { backend, relay } = start({ handlers: { t: () => {} } })
    backend.failNext('claim')
    backend.failNext('settle')
    backend.publish({ topic: 't' }, { topic: 't' })
    const errors = events(relay, 'error', 2)
    const done = events(relay, 'delivered', 2)
    await relay.start()
    const during = ((await errors) as { during: string }[]).map((e) => e.during).sort()
    await done
    await relay.stop()
    expect(during).toEqual(['claim', 'settle'])
    expect(backend.rows.size).toBe(0)
  })

  test('an outcome fenced out (the row was claimed again meanwhile) is announced as not settled', async () => {
    const { backend, relay } = start({
      handlers: {
        t: () => {
          // Another relay's claim took the row over while this handler ran.
          for (const row of backend.rows.values()) row.attempts++
        },
      },
    })
    backend.publish({ topic: 't' })
    const delivered = events(relay, 'delivered', 1)
    await relay.start()
    const [event] = (await delivered) as { settled: boolean }[]
    await relay.stop()
    expect(event!.settled).toBe(false)
    expect(backend.inState('processing')).toHaveLength(1)
  })

  test('stop({ graceMs }) aborts a straggler: not settled, its row left to its lease', async () => {
    let signal: AbortSignal | undefined
    const { backend, relay } = start({
      handlers: {
        t: (_m, ctx) => {
          signal = ctx.signal
          return new Promise(() => {})
        },
      },
    })
    backend.publish({ topic: 't' })
    const claimed = events(relay, 'claimed', 1)
    await relay.start()
    await claimed
    await relay.stop({ graceMs: 10 })
    expect([relay.running, signal?.aborted, relay.stats.inFlight]).toEqual([false, true, 0])
    expect(backend.inState('processing')).toHaveLength(1)
    expect(backend.calls.settle).toBe(0)
  })

  test('LISTEN unavailable (a pooled connection): one event and one warning, and delivery goes on by polling', async () => {
    const warnings: string[] = []
    const logger = {
      debug() {},
      info() {},
      warn: (_f: unknown, m: string) => void warnings.push(m),
      error() {},
    }
    const { backend, relay } = start({ handlers: { t: () => {} }, logger })
    backend.listenUnavailable = 'the probe NOTIFY did not come back within 1000 ms'
    const unavailable = events(relay, 'listenUnavailable', 1)
    const delivered = events(relay, 'delivered', 1)
    await relay.start()
    expect(await unavailable).toEqual([{ reason: backend.listenUnavailable }])
    backend.publish({ topic: 't' })
    await delivered
    await relay.stop()
    expect(warnings.filter((w) => w.startsWith('[outboxkit] LISTEN is not available'))).toHaveLength(1)
  })

  test('an unknown option is INVALID_CONFIG naming it and the closest valid one', () => {
    const err = (() => {
      try {
        createRelay(outbox, {
          backend: memoryBackend(),
          handlers: { t: () => {} },
          pollIntervalMS: 5,
        } as never)
      } catch (e) {
        return e
      }
    })()
    expect(isOutboxError(err, 'INVALID_CONFIG')).toBe(true)
    expect((err as Error).message).toMatch(/pollIntervalMS/)
    expect((err as Error).message).toMatch(/pollIntervalMs/)
  })
})
