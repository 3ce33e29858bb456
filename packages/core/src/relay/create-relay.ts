import { assertOutbox, type Outbox } from '../outbox/define-outbox.js'
import { resolveLogger } from '../telemetry/logger.js'
import { instrumentRelay } from './instrumentation.js'
import { resolveRelayOptions } from './relay-options.js'
import { RelayRunner } from './relay-runner.js'
import { createRelayTelemetry } from './relay-telemetry.js'
import type { Relay, RelayOptions } from './relay-types.js'

/**
 * Creates a relay: the background worker that claims due messages, runs their handler outside
 * any transaction, and settles the outcome. Run one per process, on as many processes as you
 * like: claims are disjoint.
 *
 * @example
 * ```ts
 * const relay = createRelay(outbox, { backend, handlers: { 'order.created': async (m) => send(m.payload) } })
 * await relay.start()
 * process.on('SIGTERM', () => relay.stop({ graceMs: 10_000 }))
 * ```
 * @throws OutboxError `INVALID_CONFIG` for an invalid or unknown option or a handler for an unknown topic.
 */
export function createRelay<O extends Outbox<any>>(outbox: O, options: RelayOptions<O>): Relay {
  assertOutbox(outbox, 'relay')
  const resolved = resolveRelayOptions(outbox, options as unknown as RelayOptions<Outbox>)
  const log = resolveLogger(options.logger)
  const { backend, topics, maxAttempts, keepDelivered, concurrency, leaseMs, pollIntervalMs, notify } =
    resolved
  const telemetry = createRelayTelemetry(options.telemetry, {
    outbox,
    backend,
    topics,
    maxAttempts,
    keepDelivered,
    log,
  })
  const relay = new RelayRunner({ outbox, options: resolved, log, telemetry })
  return instrumentRelay(relay, {
    log,
    telemetry,
    startFields: { table: outbox.table.display, topics, concurrency, leaseMs, pollIntervalMs, notify },
  })
}
