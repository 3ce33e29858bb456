import { randomUUID } from 'node:crypto'
import type { WakeHandlers } from '@outboxkit/core/adapter'

/**
 * The payload prefix of outboxkit's LISTEN probes. A notification whose payload starts with it is
 * a probe (this relay's or another's), never a publish: it wakes nobody.
 */
export const LISTEN_PROBE_PREFIX = 'outboxkit:listen-probe:'

/** How {@link listenWithReconnect} checks that its LISTEN hears notifications. */
export interface ListenProbe {
  /** How long to wait for the probe to come back once its NOTIFY committed, in ms. */
  readonly timeoutMs: number
  /** Sends `SELECT pg_notify(channel, payload)` through the backend's normal connection (the pool). */
  send(payload: string): Promise<void>
  /** What to do when the probe is not heard, ending the reason given to `onUnavailable`. */
  readonly advice: string
}

/** The reason given to `onUnavailable` when the probe of `channel` was not heard within `ms`. */
export function probeNotHeardReason(channel: string, ms: number, advice: string): string {
  return (
    `the LISTEN connection did not hear a probe NOTIFY on channel ${JSON.stringify(channel)} within ${ms} ms, ` +
    'so notifications do not reach it: the database is most likely behind a transaction-mode pooler ' +
    '(PgBouncer, Supavisor, RDS Proxy), which hands them to whichever client holds the server connection. ' +
    `The relay delivers by polling (pollIntervalMs); for wake-ups, ${advice}`
  )
}

/** The probing of one LISTEN subscription: whether a probe concluded, and the probe under way. */
export interface ProbeRun {
  /** Set once a probe was heard, or reported as not heard (at once when there is no probe). */
  readonly concluded: boolean
  /** Whether `payload` is a probe's (it wakes nobody); the probe under way is heard when it is its own. */
  isProbe(payload: string): boolean
  /** Ends the wait of the probe under way, as not heard (its connection was lost, or closed). */
  abandon(): void
  /**
   * Sends a probe and waits for the listening connection to hear it; inconclusive (tried again on
   * the next LISTEN) when that connection stops being `current()` or the send fails.
   */
  run(current: () => boolean): Promise<void>
}

/** The {@link ProbeRun} of a subscription to `channel` (none when `probe` is undefined). */
export function listenProbeRun(
  channel: string,
  handlers: WakeHandlers,
  probe: ListenProbe | undefined,
  isClosed: () => boolean,
): ProbeRun {
  let probed = probe === undefined
  /** The probe under way: its payload, and how to end its wait (true: heard). */
  let expected: { payload: string; done(heard: boolean): void } | undefined
  return {
    get concluded() {
      return probed
    },
    isProbe(payload) {
      if (!payload.startsWith(LISTEN_PROBE_PREFIX)) return false
      if (payload === expected?.payload) expected.done(true)
      return true
    },
    abandon() {
      expected?.done(false)
    },
    async run(current) {
      const p = probe
      if (!p || isClosed() || probed || expected) return
      const payload = `${LISTEN_PROBE_PREFIX}${randomUUID()}`
      let probeTimer: ReturnType<typeof setTimeout> | undefined
      let resolveHeard: (heard: boolean) => void = () => {}
      const heard = new Promise<boolean>((resolve) => {
        resolveHeard = resolve
      })
      expected = { payload, done: resolveHeard }
      try {
        await p.send(payload)
        if (isClosed() || !current()) return
        probeTimer = setTimeout(() => resolveHeard(false), p.timeoutMs)
        probeTimer.unref?.()
        const ok = await heard
        if (isClosed() || !current()) return
        probed = true
        if (!ok) handlers.onUnavailable?.(probeNotHeardReason(channel, p.timeoutMs, p.advice))
      } catch {
        // The pool could not send it (server down, timeout): nothing learned; the next LISTEN retries.
      } finally {
        clearTimeout(probeTimer)
        expected = undefined
      }
    },
  }
}
