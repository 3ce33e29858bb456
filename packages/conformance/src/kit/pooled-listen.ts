import type { DeliveredMessage, Outbox, Relay } from '@outboxkit/core'
import { expect } from 'vitest'
import { waitFor } from '../database.js'
import { collect, nextEvent } from './events.js'
import { observeFor } from './waits.js'

/** What the relay checks of {@link expectPollingWhenUnheard} and {@link expectWokenByDirectListen} run on. */
export interface PooledRelayCheck {
  outbox: Outbox
  /** The relay under test, not started yet. */
  relay: Relay
  /** Commits `rounds` transactions per producer through the pooler; settles each producer's outcome. */
  produce(rounds: number): Promise<PromiseSettledResult<unknown>[]>
  /** The outbox's rows, counted directly. */
  count(): Promise<number>
}

/** The relay that cannot LISTEN through the pooler, with what it must say. */
export interface PollingCheck extends PooledRelayCheck {
  /** What the relay's handlers saw. */
  seen: DeliveredMessage[]
  /** Rounds per producer committed while the relay drains. */
  more: number
  /** How many messages it must deliver in all (those committed before the start, and `more`). */
  total: number
  /** What the listenUnavailable reason must say to do. */
  advice: string
}

/**
 * A relay whose LISTEN cannot hear through the pooler delivers everything by polling (producers
 * keep committing while it drains) and emits listenUnavailable once, saying why and what to do.
 */
export async function expectPollingWhenUnheard(check: PollingCheck): Promise<void> {
  const { relay: r, seen } = check
  const unavailable = collect(r, 'listenUnavailable')
  await r.start()
  const more = check.produce(check.more) // producers keep committing while it drains
  await waitFor(() => unavailable.length > 0, { timeoutMs: 10_000, what: 'listenUnavailable' })
  expect((await more).filter((x) => x.status === 'rejected')).toEqual([])
  await waitFor(() => seen.length === check.total, { timeoutMs: 30_000, what: 'every message' })
  expect(new Set(seen.map((m) => m.id)).size).toBe(check.total)
  // The handlers saw every message; their settles follow (deletes), each within its batch.
  await waitFor(async () => (await check.count()) === 0, { timeoutMs: 10_000, what: 'every message settled' })
  expect(unavailable).toHaveLength(1)
  expect(unavailable[0]!.reason).toMatch(/transaction-mode pooler/)
  expect(unavailable[0]!.reason).toContain(check.advice)
}

/** The relay that LISTENs directly, with how to see its LISTEN. */
export interface DirectListenCheck extends PooledRelayCheck {
  /** Backends LISTENing on `channel`, seen directly. */
  listening(channel: string): Promise<number>
}

/**
 * A relay that LISTENs directly (its statements through the pooler, with a 30 s poll) is woken by
 * a publish through the pooler: the message is delivered within 5 s, and after the probe's window
 * (1 s) nothing was reported.
 */
export async function expectWokenByDirectListen(check: DirectListenCheck): Promise<void> {
  const { relay: r, outbox } = check
  const unavailable = collect(r, 'listenUnavailable')
  const firstClaim = nextEvent(r, 'claimed')
  await r.start()
  await firstClaim
  await waitFor(async () => (await check.listening(outbox.channel)) === 1, { what: 'the direct LISTEN' })
  const delivered = nextEvent(r, 'delivered', { timeoutMs: 5_000 })
  await check.produce(1)
  await delivered
  await waitFor(async () => (await check.count()) === 0, { timeoutMs: 5_000, what: 'every message' })
  await observeFor(1_500) // the probe's window (1 s) has passed
  expect(unavailable).toEqual([])
}
