import type { WakeHandlers, WakeSubscription } from '@outboxkit/core/adapter'
import { quoteIdent } from '@outboxkit/core/adapter'
import type pg from 'pg'
import { type ListenProbe, listenProbeRun, type ProbeRun } from './listen-probe.js'

export { LISTEN_PROBE_PREFIX, type ListenProbe, probeNotHeardReason } from './listen-probe.js'

/**
 * Ends `client`, but never waits longer than `ms`: `Client.end()` waits for the server to close
 * the socket, which never happens through a frozen network. Past the bound the socket is
 * destroyed, which the server sees as a dropped connection (its LISTEN ends with it).
 */
async function endWithin(client: pg.Client, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const ended = await Promise.race([
    client.end().then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms)
    }),
  ])
  clearTimeout(timer)
  if (!ended)
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy()
}

/** The LISTEN connection of one subscription and its reconnect loop, with capped backoff. */
class ReconnectingListen {
  private closed = false
  private client: pg.Client | undefined
  private timer: ReturnType<typeof setTimeout> | undefined
  private failures = 0
  private readonly probe: ProbeRun

  constructor(
    private readonly connect: () => Promise<pg.Client>,
    private readonly channel: string,
    private readonly handlers: WakeHandlers,
    probe: ListenProbe | undefined,
  ) {
    this.probe = listenProbeRun(channel, handlers, probe, () => this.closed)
  }

  private readonly onNotification = (msg: pg.Notification) => {
    if (msg.channel !== this.channel) return
    if (this.probe.isProbe(msg.payload ?? '')) return
    this.handlers.onWake()
  }

  private scheduleReconnect(): void {
    if (this.closed || this.timer) return
    const delay = Math.min(10_000, 250 * 2 ** Math.min(this.failures, 6))
    this.failures++
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.open().catch(() => {})
    }, delay)
    this.timer.unref?.()
  }

  /** Reacts to `c`'s errors and end (lost: reconnect) and notifications. */
  private watch(c: pg.Client): void {
    const lost = (err?: unknown) => {
      if (this.client !== c) return
      this.client = undefined
      this.probe.abandon()
      c.removeAllListeners('notification')
      c.end().catch(() => {})
      if (!this.closed) {
        this.handlers.onError(err ?? new Error('LISTEN connection ended'))
        this.scheduleReconnect()
      }
    }
    c.on('error', lost)
    c.on('end', () => lost())
    c.on('notification', this.onNotification)
  }

  /** Connects and LISTENs; on failure reports it, schedules a reconnect and rethrows. */
  async open(): Promise<void> {
    if (this.closed) return
    let c: pg.Client | undefined
    try {
      c = await this.connect()
      this.watch(c)
      await c.query(`LISTEN ${quoteIdent(this.channel)}`)
      if (this.closed) {
        await endWithin(c, 1_000)
        return
      }
      const listening = c
      this.client = c
      this.failures = 0
      this.handlers.onConnect?.()
      if (!this.probe.concluded) void this.probe.run(() => this.client === listening)
    } catch (err) {
      c?.end().catch(() => {})
      if (!this.closed) {
        this.handlers.onError(err)
        this.scheduleReconnect()
      }
      throw err
    }
  }

  /** Stops reconnecting and ends the LISTEN connection (bounded). */
  async close(): Promise<void> {
    this.closed = true
    this.probe.abandon()
    if (this.timer) clearTimeout(this.timer)
    const c = this.client
    this.client = undefined
    if (c) {
      c.removeAllListeners('notification')
      await endWithin(c, 1_000)
    }
  }
}

/**
 * LISTENs on `channel` with a dedicated client made by `connect`, and reconnects with capped
 * backoff whenever the connection fails or is cut (for example by `pg_terminate_backend`).
 * Each (re)connection calls `onConnect`, so the relay claims whatever it missed meanwhile.
 *
 * With `probe`, each LISTEN (until one probe concludes) is followed by a probe NOTIFY sent through
 * `probe.send`; when the listening client does not hear it within `probe.timeoutMs` of its commit,
 * `onUnavailable` is called once (the relay keeps polling). Probe payloads never call `onWake`.
 */
export async function listenWithReconnect(
  connect: () => Promise<pg.Client>,
  channel: string,
  handlers: WakeHandlers,
  probe?: ListenProbe,
): Promise<WakeSubscription> {
  const listen = new ReconnectingListen(connect, channel, handlers, probe)
  await listen.open().catch(() => {})
  return { close: () => listen.close() }
}
