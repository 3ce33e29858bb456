import { OutboxError } from '@outboxkit/core'
import type { WakeHandlers, WakeSubscription } from '@outboxkit/core/adapter'
import type postgres from 'postgres'
import { mapConnectTimeout, settleWithin } from './deadline.js'
import { type ListenProbe, ListenProber } from './listen-probe.js'
import { ADAPTER } from './transaction.js'

export { LISTEN_PROBE_PREFIX, type ListenProbe } from './listen-probe.js'

/** What the callbacks of one `listenOn` share. */
interface ListenState {
  closed: boolean
  /** How many times postgres.js LISTENed (1: the first LISTEN; more: re-LISTENs after drops). */
  listens: number
}

/** postgres.js' onlisten: every (re)LISTEN calls `onConnect` (after `onError` for a re-LISTEN) and probes. */
function onListen(state: ListenState, channel: string, handlers: WakeHandlers, prober: ListenProber): void {
  if (state.closed) return
  state.listens++
  // A probe waiting on the dropped connection ends (inconclusive) so this LISTEN can probe.
  prober.abandon()
  if (state.listens > 1) {
    handlers.onError(
      new OutboxError(
        'DATABASE',
        `the LISTEN connection on channel ${JSON.stringify(channel)} was cut; postgres.js re-established it. Notifications sent meanwhile were missed; the relay claims now.`,
        { source: ADAPTER },
      ),
    )
  }
  handlers.onConnect?.()
  if (!prober.concluded) {
    const listen = state.listens
    // After the previous probe's finally ran (it ends on this microtask's heels).
    setImmediate(() => void prober.run(() => state.listens === listen))
  }
}

/** Waits for the first LISTEN, at most `timeoutMs` (then `onError`; postgres.js keeps trying). */
async function awaitFirstListen(
  first: Promise<void>,
  state: ListenState,
  channel: string,
  handlers: WakeHandlers,
  timeoutMs: number | undefined,
): Promise<void> {
  if (timeoutMs === undefined) await first
  else if (
    (await settleWithin(
      first.then(() => true),
      timeoutMs,
    )) === undefined &&
    !state.closed &&
    state.listens === 0
  ) {
    handlers.onError(
      new OutboxError(
        'TIMEOUT',
        `LISTEN on channel ${JSON.stringify(channel)} did not succeed within ${timeoutMs} ms (commandTimeoutMs); postgres.js keeps trying in the background and the relay polls meanwhile.`,
        { source: ADAPTER },
      ),
    )
  }
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
  const state: ListenState = { closed: false, listens: 0 }
  const prober = new ListenProber(channel, handlers, probe, () => state.closed)
  let unlisten: (() => Promise<void>) | undefined
  const pending = Promise.resolve(
    sql.listen(
      channel,
      (payload) => {
        if (state.closed || prober.isProbe(payload)) return
        handlers.onWake()
      },
      () => onListen(state, channel, handlers, prober),
    ),
  )
  const first = pending.then(
    async (meta) => {
      unlisten = () => meta.unlisten()
      if (state.closed) await meta.unlisten()
    },
    (err: unknown) => {
      if (!state.closed) handlers.onError(mapConnectTimeout(err, 'LISTEN'))
    },
  )
  await awaitFirstListen(first, state, channel, handlers, timeoutMs)

  return {
    async close() {
      if (state.closed) return
      state.closed = true
      prober.abandon()
      if (unlisten) await settleWithin(unlisten(), timeoutMs ?? 5_000)
    },
  }
}
