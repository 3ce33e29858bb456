import type { Relay, RelayEvents } from '@outboxkit/core'

/** Options of {@link nextEvent}. */
export interface NextEventOptions<K extends keyof RelayEvents> {
  /** Only an event for which this returns true resolves the wait. Default: any. */
  where?: (e: RelayEvents[K]) => boolean
  /** How long to wait before rejecting. Default 10 s. */
  timeoutMs?: number
}

/**
 * Resolves with the next `event` of `relay` that matches `where`, or rejects after `timeoutMs`.
 * Subscribe (call this) before the action that causes the event.
 */
export function nextEvent<K extends keyof RelayEvents>(
  relay: Relay,
  event: K,
  { where = () => true, timeoutMs = 10_000 }: NextEventOptions<K> = {},
): Promise<RelayEvents[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off()
      reject(new Error(`timed out after ${timeoutMs} ms waiting for relay event '${String(event)}'`))
    }, timeoutMs)
    const off = relay.on(event, (e) => {
      if (!where(e)) return
      clearTimeout(timer)
      off()
      resolve(e)
    })
  })
}

/** Collects every `event` of `relay` into an array (live). */
export function collect<K extends keyof RelayEvents>(relay: Relay, event: K): RelayEvents[K][] {
  const seen: RelayEvents[K][] = []
  relay.on(event, (e) => seen.push(e))
  return seen
}
