import { randomUUID } from 'node:crypto'
import type { WakeHandlers } from '@outboxkit/core/adapter'

/**
 * The payload prefix of outboxkit's LISTEN probes (the same in `@outboxkit/pg`). A notification
 * whose payload starts with it is a probe (this relay's or another's), never a publish.
 */
export const LISTEN_PROBE_PREFIX = 'outboxkit:listen-probe:'

/** How {@link listenOn} checks that its LISTEN hears notifications. */
export interface ListenProbe {
  /** How long to wait for the probe to come back once its NOTIFY committed, in ms. */
  readonly timeoutMs: number
  /** Sends `SELECT pg_notify(channel, payload)` through the backend's normal `sql` (the pool). */
  send(payload: string): Promise<void>
}

function probeNotHeardReason(channel: string, ms: number): string {
  return (
    `the LISTEN connection did not hear a probe NOTIFY on channel ${JSON.stringify(channel)} within ${ms} ms, ` +
    'so notifications do not reach it: the database is most likely behind a transaction-mode pooler ' +
    '(PgBouncer, Supavisor, RDS Proxy), which hands them to whichever client holds the server connection. ' +
    'The relay delivers by polling (pollIntervalMs); for wake-ups, give the relay a direct connection for ' +
    'LISTEN: postgresJsBackend(sql, { listen: postgres(DIRECT_URL) })'
  )
}

/**
 * The probing of a `listenOn` subscription to `channel`: whether a probe concluded, and the probe
 * under way. Without a `probe`, there is nothing to probe: it has concluded from the start.
 */
export class ListenProber {
  /** Set once a probe was heard, or reported as not heard. */
  private probed: boolean
  /** The probe under way: its payload, and how to end its wait (true: heard). */
  private expected: { payload: string; done(heard: boolean): void } | undefined

  constructor(
    private readonly channel: string,
    private readonly handlers: WakeHandlers,
    private readonly probe: ListenProbe | undefined,
    private readonly isClosed: () => boolean,
  ) {
    this.probed = probe === undefined
  }

  /** Whether no probe has to run any more. */
  get concluded(): boolean {
    return this.probed
  }

  /** Whether `payload` is a probe's, which wakes nobody; it ends the wait of the probe under way if its own. */
  isProbe(payload: string): boolean {
    if (!payload.startsWith(LISTEN_PROBE_PREFIX)) return false
    if (payload === this.expected?.payload) this.expected.done(true)
    return true
  }

  /** Ends the wait of the probe under way (inconclusive): its LISTEN was re-established, or closed. */
  abandon(): void {
    this.expected?.done(false)
  }

  /** Sends a probe and waits for it to be heard; nothing learned when `sameListen()` turns false meanwhile. */
  async run(sameListen: () => boolean): Promise<void> {
    const p = this.probe
    if (!p || this.isClosed() || this.probed || this.expected) return
    const payload = `${LISTEN_PROBE_PREFIX}${randomUUID()}`
    let timer: ReturnType<typeof setTimeout> | undefined
    let done: (heard: boolean) => void = () => {}
    const heard = new Promise<boolean>((resolve) => {
      done = resolve
    })
    this.expected = { payload, done }
    try {
      await p.send(payload)
      // A re-LISTEN meanwhile means the connection dropped: nothing learned, that LISTEN probes again.
      if (this.isClosed() || !sameListen()) return
      timer = setTimeout(() => done(false), p.timeoutMs)
      timer.unref?.()
      const ok = await heard
      if (this.isClosed() || !sameListen()) return
      this.probed = true
      if (!ok) this.handlers.onUnavailable?.(probeNotHeardReason(this.channel, p.timeoutMs))
    } catch {
      // The pool could not send it (server down, timeout): nothing learned; the next LISTEN retries.
    } finally {
      clearTimeout(timer)
      this.expected = undefined
    }
  }
}
