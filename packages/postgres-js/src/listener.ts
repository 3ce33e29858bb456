import { OutboxError } from '@outboxkit/core'
import type { WakeHandlers, WakeSubscription } from '@outboxkit/core/adapter'
import type postgres from 'postgres'
import { mapConnectTimeout, settleWithin } from './deadline.js'
import { ADAPTER } from './transaction.js'

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
 */
export async function listenOn(
  sql: Pick<postgres.Sql<any>, 'listen'>,
  channel: string,
  handlers: WakeHandlers,
  timeoutMs: number | undefined,
): Promise<WakeSubscription> {
  let closed = false
  let listens = 0
  let unlisten: (() => Promise<void>) | undefined

  const pending = Promise.resolve(
    sql.listen(
      channel,
      () => {
        if (!closed) handlers.onWake()
      },
      () => {
        if (closed) return
        listens++
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
      if (unlisten) await settleWithin(unlisten(), timeoutMs ?? 5_000)
    },
  }
}
