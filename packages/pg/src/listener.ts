import { randomUUID } from 'node:crypto'
import type { WakeHandlers, WakeSubscription } from '@outboxkit/core/adapter'
import { quoteIdent } from '@outboxkit/core/adapter'
import type pg from 'pg'

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
  let closed = false
  let client: pg.Client | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  let failures = 0
  /** Set once a probe was heard, or reported as not heard. */
  let probed = probe === undefined
  /** The probe under way: its payload, and how to end its wait (true: heard). */
  let expected: { payload: string; done(heard: boolean): void } | undefined

  const onNotification = (msg: pg.Notification) => {
    if (msg.channel !== channel) return
    const payload = msg.payload ?? ''
    if (payload.startsWith(LISTEN_PROBE_PREFIX)) {
      if (payload === expected?.payload) expected.done(true)
      return
    }
    handlers.onWake()
  }

  /** Sends a probe and waits for `c` to hear it; inconclusive (tried again on the next LISTEN) if `c` is lost or the send fails. */
  async function runProbe(p: ListenProbe, c: pg.Client): Promise<void> {
    if (closed || probed || expected) return
    const payload = `${LISTEN_PROBE_PREFIX}${randomUUID()}`
    let probeTimer: ReturnType<typeof setTimeout> | undefined
    let resolveHeard: (heard: boolean) => void = () => {}
    const heard = new Promise<boolean>((resolve) => {
      resolveHeard = resolve
    })
    expected = { payload, done: resolveHeard }
    try {
      await p.send(payload)
      if (closed || client !== c) return
      probeTimer = setTimeout(() => resolveHeard(false), p.timeoutMs)
      probeTimer.unref?.()
      const ok = await heard
      if (closed || client !== c) return
      probed = true
      if (!ok) handlers.onUnavailable?.(probeNotHeardReason(channel, p.timeoutMs, p.advice))
    } catch {
      // The pool could not send it (server down, timeout): nothing learned; the next LISTEN retries.
    } finally {
      clearTimeout(probeTimer)
      expected = undefined
    }
  }

  function scheduleReconnect() {
    if (closed || timer) return
    const delay = Math.min(10_000, 250 * 2 ** Math.min(failures, 6))
    failures++
    timer = setTimeout(() => {
      timer = undefined
      void open().catch(() => {})
    }, delay)
    timer.unref?.()
  }

  async function open(): Promise<void> {
    if (closed) return
    let c: pg.Client | undefined
    try {
      c = await connect()
      const lost = (err?: unknown) => {
        if (client !== c) return
        client = undefined
        expected?.done(false)
        c?.removeAllListeners('notification')
        c?.end().catch(() => {})
        if (!closed) {
          handlers.onError(err ?? new Error('LISTEN connection ended'))
          scheduleReconnect()
        }
      }
      c.on('error', lost)
      c.on('end', () => lost())
      c.on('notification', onNotification)
      await c.query(`LISTEN ${quoteIdent(channel)}`)
      if (closed) {
        await endWithin(c, 1_000)
        return
      }
      client = c
      failures = 0
      handlers.onConnect?.()
      if (probe && !probed) void runProbe(probe, c)
    } catch (err) {
      c?.end().catch(() => {})
      if (!closed) {
        handlers.onError(err)
        scheduleReconnect()
      }
      throw err
    }
  }

  await open().catch(() => {})
  return {
    async close() {
      closed = true
      expected?.done(false)
      if (timer) clearTimeout(timer)
      const c = client
      client = undefined
      if (c) {
        c.removeAllListeners('notification')
        await endWithin(c, 1_000)
      }
    },
  }
}
