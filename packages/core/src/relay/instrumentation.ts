import type { SafeLogger } from '../telemetry/logger.js'
import type { RelayTelemetry } from './relay-telemetry.js'
import type { Relay } from './relay-types.js'

/** What {@link instrumentRelay} reports about. */
export interface RelayInstrumentation {
  readonly log: SafeLogger
  readonly telemetry: RelayTelemetry
  /** Fields of the start message (table, topics, limits). */
  readonly startFields: Record<string, unknown>
}

/**
 * Adds the relay's lifecycle and outcome logs and its telemetry: start and stop (info), retries
 * (warn), dead letters (error), outcomes that could not be written (warn), and a throwing event
 * listener (error). The success path stays silent. Returns the same relay.
 */
export function instrumentRelay(relay: Relay, { log, telemetry, startFields }: RelayInstrumentation): Relay {
  telemetry.attach(relay)
  const table = startFields.table
  if (log.enabled) {
    relay.on('retried', ({ message, error, delayMs, settled }) => {
      if (!settled) return
      log.log(
        'warn',
        { table, id: message.id, topic: message.topic, attempts: message.attempts, delayMs, err: error },
        `handler failed on attempt ${message.attempts}; retrying in ${delayMs} ms`,
      )
    })
    relay.on('deadLettered', ({ id, topic, attempts, reason, error, settled }) => {
      if (!settled) return
      log.log(
        'error',
        { table, id, topic, attempts, reason, error },
        `message dead-lettered (${reason}) after ${attempts} attempt(s): ${error}`,
      )
    })
    relay.on('delivered', ({ message, settled }) => {
      if (settled) return
      log.log(
        'warn',
        { table, id: message.id, topic: message.topic, attempts: message.attempts },
        'handler succeeded but the row had been claimed again (its lease ran out first): it will be delivered again; raise maxHandlerMs above your handler duration, or check the lease heartbeat (error events during lease)',
      )
    })
    relay.on('error', ({ error, during }) => {
      if (during === 'listener') log.log('error', { table, err: error }, 'a relay event listener threw')
    })
  }

  const start = relay.start.bind(relay)
  const stop = relay.stop.bind(relay)
  let stopping: Promise<void> | undefined
  relay.start = async () => {
    const wasRunning = relay.running
    await telemetry.prepare()
    await start()
    if (!relay.running || wasRunning) return
    await telemetry.started()
    log.log('info', startFields, `relay started on ${String(table)}`)
  }
  relay.stop = (options) => {
    if (stopping) return stopping
    const wasRunning = relay.running
    telemetry.stopped()
    if (wasRunning) log.log('info', { table }, 'relay stopping: draining running handlers')
    const begun = Date.now()
    stopping = stop(options)
      .then(() => {
        if (wasRunning) log.log('info', { table, ms: Date.now() - begun }, 'relay stopped')
      })
      .finally(() => {
        stopping = undefined
      })
    return stopping
  }
  return relay
}
