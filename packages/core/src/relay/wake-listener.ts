import type { TableRef } from '../outbox/define-outbox.js'
import { toOutboxError } from '../outbox/errors.js'
import type { OutboxBackend, WakeSubscription } from '../protocol/backend.js'
import type { SafeLogger } from '../telemetry/logger.js'
import type { RelayEvents } from './relay-types.js'

/** What the LISTEN subscription reports to. */
export interface WakeListenerDeps {
  readonly backend: OutboxBackend
  readonly channel: string
  readonly table: TableRef
  readonly log: SafeLogger
  /** A publish NOTIFY arrived, or the connection (re)connected: claim now. */
  onWake(): void
  /** LISTEN cannot hear notifications here (said once): the relay polls. */
  onUnavailable(reason: string): void
  reportError(error: unknown, during: RelayEvents['error']['during']): void
}

/**
 * Subscribes to the backend's publish wake-ups (PostgreSQL LISTEN) on top of polling. Says once when
 * the connection is lost and once when it is back; a failed subscription leaves the relay polling.
 * Resolves to the subscription, or undefined when the backend has none or it failed.
 */
export async function listenForWakeups(deps: WakeListenerDeps): Promise<WakeSubscription | undefined> {
  const { backend, log, table } = deps
  if (!backend.listen) return undefined
  let lost = false
  let unavailable = false
  try {
    return await backend.listen(deps.channel, {
      onWake: deps.onWake,
      onConnect: () => {
        if (lost) log.log('info', { table: table.display }, 'LISTEN connection re-established')
        lost = false
        deps.onWake()
      },
      onError: (error) => {
        if (!lost)
          log.log(
            'warn',
            { table: table.display, err: error },
            'LISTEN connection lost; reconnecting (wake-ups fall back to polling meanwhile)',
          )
        lost = true
        deps.reportError(toOutboxError(error, backend.name, 'LISTEN connection'), 'listen')
      },
      onUnavailable: (reason) => {
        if (unavailable) return
        unavailable = true
        log.log(
          'warn',
          { table: table.display, reason },
          `LISTEN is not available; delivering by polling: ${reason}`,
        )
        deps.onUnavailable(reason)
      },
    })
  } catch (error) {
    log.log('warn', { table: table.display, err: error }, 'LISTEN failed; relying on polling')
    deps.reportError(error, 'listen')
    return undefined
  }
}
