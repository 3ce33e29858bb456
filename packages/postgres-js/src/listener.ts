import { randomUUID } from 'node:crypto'
import { OutboxError } from '@outboxkit/core'
import type { WakeHandlers, WakeSubscription } from '@outboxkit/core/adapter'
import type postgres from 'postgres'
import { mapConnectTimeout, settleWithin } from './deadline.js'
import { ADAPTER } from './transaction.js'

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
 * LISTENs on `channel` with postgres.js' own `sql.listen`: a dedicated connection, shared by every
 * listener of that `sql`, which postgres.js re-opens and re-LISTENs by itself after it drops.
 *
 * - `onConnect` runs on every (re)LISTEN, so the relay claims whatever it missed meanwhile.
 * - postgres.js reports no loss of that connection; when a re-LISTEN follows one, `onError` tells
 *   the relay the connection was cut, then `onConnect` runs.
 * - The first LISTEN is awaited at most `timeoutMs` (else until postgres.js gives up,
 *   `connect_timeout`); if it fails, `onError` is called and postgres.js keeps retrying in the
 *   background: `onConnect` runs when it succeeds.
 * - `close()` unlistens (bounded by `timeoutMs`) and silences the callbacks. postgres.js 3.4 loses
 *   track of a listener once it re-LISTENed after a drop, so after one its `unlisten()` cannot
 *   remove it: the channel stays LISTENed on that `sql`'s listen connection (silent) until
 *   `sql.end()`.
 * - With `probe`, each LISTEN (until one probe concludes) is followed by a probe NOTIFY sent
 *   through `probe.send`; when it is not heard within `probe.timeoutMs` of its commit,
 *   `onUnavailable` is called once (the relay keeps polling). Probe payloads never call `onWake`.
 */
export async function listenOn(
  sql: Pick<postgres.Sql<any>, 'listen'>,
  channel: string,
  handlers: WakeHandlers,
  timeoutMs: number | undefined,
  probe?: ListenProbe,
): Promise<WakeSubscription> {
  let closed = false
  let listens = 0
  let unlisten: (() => Promise<void>) | undefined
  /** Set once a probe was heard, or reported as not heard. */
  let probed = probe === undefined
  /** The probe under way: its payload, and how to end its wait (true: heard). */
  let expected: { payload: string; done(heard: boolean): void } | undefined

  async function runProbe(p: ListenProbe, listen: number): Promise<void> {
    if (closed || probed || expected) return
    const payload = `${LISTEN_PROBE_PREFIX}${randomUUID()}`
    let timer: ReturnType<typeof setTimeout> | undefined
    let done: (heard: boolean) => void = () => {}
    const heard = new Promise<boolean>((resolve) => {
      done = resolve
    })
    expected = { payload, done }
    try {
      await p.send(payload)
      // A re-LISTEN meanwhile means the connection dropped: nothing learned, that LISTEN probes again.
      if (closed || listens !== listen) return
      timer = setTimeout(() => done(false), p.timeoutMs)
      timer.unref?.()
      const ok = await heard
      if (closed || listens !== listen) return
      probed = true
      if (!ok) handlers.onUnavailable?.(probeNotHeardReason(channel, p.timeoutMs))
    } catch {
      // The pool could not send it (server down, timeout): nothing learned; the next LISTEN retries.
    } finally {
      clearTimeout(timer)
      expected = undefined
    }
  }

  const pending = Promise.resolve(
    sql.listen(
      channel,
      (payload) => {
        if (closed) return
        if (payload.startsWith(LISTEN_PROBE_PREFIX)) {
          if (payload === expected?.payload) expected.done(true)
          return
        }
        handlers.onWake()
      },
      () => {
        if (closed) return
        listens++
        // A probe waiting on the dropped connection ends (inconclusive) so this LISTEN can probe.
        expected?.done(false)
        if (listens > 1) {
          handlers.onError(
            new OutboxError(
              'DATABASE',
              `the LISTEN connection on channel ${JSON.stringify(channel)} was cut; postgres.js re-established it. Notifications sent meanwhile were missed; the relay claims now.`,
              { source: ADAPTER },
            ),
          )
        }
        handlers.onConnect?.()
        if (probe && !probed) {
          const listen = listens
          // After the previous probe's finally ran (it ends on this microtask's heels).
          setImmediate(() => void runProbe(probe, listen))
        }
      },
    ),
  )
  const first = pending.then(
    async (meta) => {
      unlisten = () => meta.unlisten()
      if (closed) await meta.unlisten()
    },
    (err: unknown) => {
      if (!closed) handlers.onError(mapConnectTimeout(err, 'LISTEN'))
    },
  )

  if (timeoutMs === undefined) await first
  else if (
    (await settleWithin(
      first.then(() => true),
      timeoutMs,
    )) === undefined &&
    !closed &&
    listens === 0
  ) {
    handlers.onError(
      new OutboxError(
        'TIMEOUT',
        `LISTEN on channel ${JSON.stringify(channel)} did not succeed within ${timeoutMs} ms (commandTimeoutMs); postgres.js keeps trying in the background and the relay polls meanwhile.`,
        { source: ADAPTER },
      ),
    )
  }

  return {
    async close() {
      if (closed) return
      closed = true
      expected?.done(false)
      if (unlisten) await settleWithin(unlisten(), timeoutMs ?? 5_000)
    },
  }
}
