import { createRelay, type Outbox, type OutboxBackend, type Relay, type RelayOptions } from '@outboxkit/core'
import { afterEach } from 'vitest'

/** What a test opens and leaves to the `afterEach` of {@link useTestResources} to close. */
export interface TestResources {
  /** A relay (`createRelay(outbox, options)`), stopped with no grace after the test. */
  relay<O extends Outbox<any>>(outbox: O, options: RelayOptions<O>): Relay
  /** `backend`, closed after the test (after the relays stopped). */
  backend<B extends OutboxBackend>(backend: B): B
  /** Something else to close after the test (after the backends). */
  closer(close: () => Promise<unknown>): void
}

/**
 * Tracks the relays, backends and other closers a describe block's tests open, and registers one
 * `afterEach` that stops the relays, then closes the backends, then runs the closers (each failure
 * ignored: a test that failed half way leaves things half open).
 */
export function useTestResources(): TestResources {
  const relays: Relay[] = []
  const backends: OutboxBackend[] = []
  const closers: (() => Promise<unknown>)[] = []
  afterEach(async () => {
    await Promise.all(relays.splice(0).map((r) => r.stop({ graceMs: 0 }).catch(() => {})))
    await Promise.all(backends.splice(0).map((b) => b.close().catch(() => {})))
    await Promise.all(closers.splice(0).map((c) => c().catch(() => {})))
  })
  return {
    relay: (outbox, options) => {
      const r = createRelay(outbox, options)
      relays.push(r)
      return r
    },
    backend: (backend) => {
      backends.push(backend)
      return backend
    },
    closer: (close) => void closers.push(close),
  }
}
