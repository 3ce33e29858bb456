import type { WakeHandlers } from '@outboxkit/core/adapter'
import { expect } from 'vitest'
import { waitFor } from '../database.js'
import { observeFor } from './waits.js'

/** A LISTEN subscription under test, with the payloads its connection received (seen before the listener sees them). */
export interface ProbedSubscription {
  payloads: string[]
  close(): Promise<void>
}

/** What {@link expectProbeHeardOnlyDirectly} runs on. */
export interface ProbeCheck {
  /** The direct URL (the probe is heard) and the pooled one (it is not), in that order. */
  urls: readonly [direct: string, pooled: string]
  /** The listener's probe payload prefix (`LISTEN_PROBE_PREFIX`). */
  probePrefix: string
  /** Subscribes through `url` with `handlers` and a 500 ms probe sent through the pooler. */
  subscribe(url: string, handlers: Required<WakeHandlers>): Promise<ProbedSubscription>
  /** Sends a publish's NOTIFY (an empty payload) on the channel, directly. */
  notifyDirectly(): Promise<unknown>
  /** What the one `onUnavailable` reason must match, through the pooler. */
  unavailableReason: RegExp[]
  /** Registers a closer run after the test. */
  closer(close: () => Promise<unknown>): void
}

/**
 * The probe's payload wakes nobody and a publish's does, directly; through the pooler the probe is
 * not heard, nothing arrives, and onUnavailable is called once with the expected reason.
 */
export async function expectProbeHeardOnlyDirectly(check: ProbeCheck): Promise<void> {
  const [direct, pooled] = check.urls
  for (const [url, heard] of [
    [direct, true],
    [pooled, false],
  ] as const) {
    let wakes = 0
    let connected = false
    const unavailable: string[] = []
    const sub = await check.subscribe(url, {
      onWake: () => wakes++,
      onError: () => {},
      onConnect: () => {
        connected = true
      },
      onUnavailable: (reason) => unavailable.push(reason),
    })
    const { payloads } = sub
    check.closer(() => sub.close())
    await waitFor(() => connected, { what: 'the LISTEN connection' })
    if (heard) {
      await waitFor(() => payloads.some((p) => p.startsWith(check.probePrefix)), { what: 'the probe' })
      await check.notifyDirectly()
      await waitFor(() => payloads.includes(''), { what: "a publish's NOTIFY" })
      // Delivered in commit order on one connection: the probe came first and woke nobody.
      expect(wakes).toBe(1)
      await observeFor(800)
      expect(unavailable).toEqual([])
    } else {
      await waitFor(() => unavailable.length > 0, { what: 'onUnavailable' })
      for (const reason of check.unavailableReason) expect(unavailable[0]).toMatch(reason)
      await observeFor(800)
      expect(unavailable).toHaveLength(1)
      expect(payloads).toEqual([])
    }
    await sub.close()
  }
}
