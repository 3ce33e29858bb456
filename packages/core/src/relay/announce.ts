import type { ClaimedRow } from '../protocol/backend.js'
import type { TypedEmitter } from './emitter.js'
import type { Outcome } from './outcome.js'
import type { RelayEvents, RelayStats } from './relay-types.js'

/** The relay's counters, as {@link RelayStats} shows them (less `inFlight`, which the slots know). */
export type RelayCounters = Omit<RelayStats, 'inFlight'>

/** Counts and announces a written outcome (`settled: false`: fenced out, the row was claimed again). */
export function announceOutcome(
  outcome: Outcome,
  settled: boolean,
  emitter: TypedEmitter<RelayEvents>,
  counters: RelayCounters,
): void {
  const { settlement, message } = outcome
  switch (settlement.outcome) {
    case 'delivered':
      counters.delivered++
      if (emitter.has('delivered'))
        emitter.emit('delivered', { message: message!, durationMs: outcome.durationMs!, settled })
      return
    case 'retry':
      counters.retried++
      if (emitter.has('retried'))
        emitter.emit('retried', {
          message: message!,
          error: outcome.error,
          delayMs: settlement.delayMs,
          settled,
        })
      return
    case 'dead': {
      counters.deadLettered++
      if (!emitter.has('deadLettered')) return
      const { row } = outcome.entry
      emitter.emit('deadLettered', {
        id: row.id,
        topic: row.topic,
        attempts: row.attempts,
        reason: outcome.reason!,
        error: outcome.deadError!,
        ...(message ? { message } : {}),
        settled,
      })
    }
  }
}

/** Counts and announces a row the claim dead-lettered (it had used up its attempts without an outcome). */
export function announceDeadAtClaim(
  row: ClaimedRow,
  emitter: TypedEmitter<RelayEvents>,
  counters: RelayCounters,
): void {
  counters.deadLettered++
  emitter.emit('deadLettered', {
    id: row.id,
    topic: row.topic,
    attempts: row.attempts,
    reason: 'max-attempts',
    error: row.lastError ?? 'lease expired on the final attempt',
    settled: true,
  })
}
