// A server process SIGKILLed in the middle of a relay's drain and started again, with what the
// relay's counted handler did meanwhile, so a test can tell a backoff from a hot loop.
import type { Relay } from '@outboxkit/core'
import { waitFor } from '../database.js'
import type { HandlerCounts } from './counted-handler.js'
import type { ServerProcess } from './server-process.js'
import { observeFor } from './waits.js'

/** The relay options of a restart test: a few messages at a time, retried with backoff. */
export const RESTART_RELAY_OPTIONS = {
  concurrency: 4,
  retry: { baseMs: 200, maxMs: 2_000 },
  maxAttempts: 100,
  pollIntervalMs: 50,
} as const

/** What {@link killServerMidDrain} counted around the outage. */
export interface MidDrainKill {
  /** Messages delivered when the server was killed. */
  readonly deliveredAtKill: number
  /** Handler calls when the server was started again. */
  readonly callsWhileDown: number
  /** How long the server was down. */
  readonly downMs: number
}

/**
 * Starts `relay`, SIGKILLs `server` once 50 messages were delivered, keeps it down ~3 s, then
 * starts it again (same port, same store).
 */
export async function killServerMidDrain(
  relay: Relay,
  server: ServerProcess,
  stats: HandlerCounts,
): Promise<MidDrainKill> {
  await relay.start()
  await waitFor(() => stats.delivered >= 50 || undefined, {
    timeoutMs: 30_000,
    what: '50 messages delivered',
  })
  await server.stop('SIGKILL')
  const deliveredAtKill = stats.delivered
  const down = Date.now()
  await observeFor(3_000)
  const callsWhileDown = stats.calls
  await server.start()
  return { deliveredAtKill, callsWhileDown, downMs: Date.now() - down }
}
