// A relay handler wrapped to count what the relay does with it: calls, successes and failures
// (per message too), so a test can tell a backoff from a hot loop.
import type { Handler } from '@outboxkit/core'

/** What {@link countedHandler} counted so far. */
export interface HandlerCounts {
  calls: number
  delivered: number
  failures: number
  readonly failuresOf: Map<string, number>
}

/**
 * `forward`, preceded by a pause of `delayMs` (a little work per message, so a fault lands in
 * the middle of a drain), counting every call, success and failure.
 */
export function countedHandler(forward: Handler, delayMs = 0): { handler: Handler; counts: HandlerCounts } {
  const counts: HandlerCounts = { calls: 0, delivered: 0, failures: 0, failuresOf: new Map() }
  const handler: Handler = async (message, context) => {
    counts.calls++
    try {
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
      await forward(message, context)
      counts.delivered++
    } catch (error) {
      counts.failures++
      counts.failuresOf.set(message.id, (counts.failuresOf.get(message.id) ?? 0) + 1)
      throw error
    }
  }
  return { handler, counts }
}
