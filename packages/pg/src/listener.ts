import type { WakeHandlers, WakeSubscription } from '@outboxkit/core/adapter'
import { quoteIdent } from '@outboxkit/core/adapter'
import type pg from 'pg'

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
 */
export async function listenWithReconnect(
  connect: () => Promise<pg.Client>,
  channel: string,
  handlers: WakeHandlers,
): Promise<WakeSubscription> {
  let closed = false
  let client: pg.Client | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  let failures = 0

  const onNotification = (msg: pg.Notification) => {
    if (msg.channel === channel) handlers.onWake()
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
