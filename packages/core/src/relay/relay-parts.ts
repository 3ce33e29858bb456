import type { ClaimedRow } from '../protocol/backend.js'
import { Claimer } from './claimer.js'
import { type InFlight, SlotTable } from './in-flight.js'
import { LeaseKeeper } from './lease-keeper.js'
import type { Outcome } from './outcome.js'
import type { RelayCollaborators } from './relay-runner.js'
import type { RelayEvents } from './relay-types.js'
import { Settler } from './settler.js'

/** How the relay reacts to what its parts report. */
export interface RelayReactions {
  onRows(rows: readonly ClaimedRow[], limit: number, sentAt: number): void
  onLapse(entry: InFlight, why: string): void
  onWritten(batch: readonly Outcome[], applied: ReadonlySet<string> | undefined): void
  reportError(error: unknown, during: RelayEvents['error']['during']): void
}

/** The parts of one relay, each owning its state. */
export interface RelayParts {
  readonly slots: SlotTable
  readonly claimer: Claimer
  readonly leases: LeaseKeeper
  readonly settler: Settler
}

/** Builds a relay's parts from its resolved options, with the backend's statements passed in. */
export function createRelayParts(c: RelayCollaborators, on: RelayReactions): RelayParts {
  const o = c.options
  const slots = new SlotTable(o.concurrency, o.maxPendingOutcomes)
  return {
    slots,
    claimer: createClaimer(c, on, slots),
    leases: createLeaseKeeper(c, on, slots),
    settler: createSettler(c, on),
  }
}

function createClaimer(c: RelayCollaborators, on: RelayReactions, slots: SlotTable): Claimer {
  const { outbox, options: o, log } = c
  const table = outbox.table.display
  return new Claimer(
    {
      claim: (limit) =>
        o.backend.claim({
          table: outbox.table,
          topics: o.topics,
          limit,
          leaseMs: o.leaseMs,
          maxAttempts: o.maxAttempts,
          ordering: o.ordering,
        }),
      freeSlots: () => slots.free(),
      heldSlots: () => slots.held,
      onRows: on.onRows,
      onError: (error, failures, retryInMs) => {
        on.reportError(error, 'claim')
        log.log(
          'warn',
          { table, err: error, failures, retryInMs },
          `claim failed; backing off ${retryInMs} ms`,
        )
      },
      onRecovered: (failures) => log.log('info', { table }, `claims work again after ${failures} failure(s)`),
    },
    {
      batchSize: o.batchSize,
      minClaim: Math.ceil(Math.min(o.concurrency, o.batchSize) / 2),
      pollIntervalMs: o.pollIntervalMs,
      // Ordered topics: only each key's head is claimable and the claim in flight holds them; a
      // second claim would walk the whole backlog for heads that are not there.
      mayOverlap: !o.ordering,
    },
  )
}

function createLeaseKeeper(c: RelayCollaborators, on: RelayReactions, slots: SlotTable): LeaseKeeper {
  const { outbox, options: o, log } = c
  const { backend, leaseMs } = o
  return new LeaseKeeper(
    {
      extend: backend.extendLease
        ? (rows) => backend.extendLease!({ table: outbox.table, leaseMs, rows })
        : undefined,
      running: () => slots.running(),
      onLapse: on.onLapse,
      onExtendFailed: (error, messages) => {
        log.log(
          'warn',
          { table: outbox.table.display, err: error, messages },
          'extending leases failed; a handler whose lease lapses meanwhile is aborted',
        )
        on.reportError(error, 'lease')
      },
    },
    { leaseMs, heartbeatMs: o.heartbeatMs, maxHandlerMs: o.maxHandlerMs },
  )
}

function createSettler(c: RelayCollaborators, on: RelayReactions): Settler {
  const { outbox, options: o, log } = c
  return new Settler({
    write: (settlements) =>
      o.backend.settle({ table: outbox.table, keepDelivered: o.keepDelivered, settlements }),
    onWritten: on.onWritten,
    onFailed: (error, failures, retryInMs, outcomes) => {
      on.reportError(error, 'settle')
      log.log(
        'warn',
        { table: outbox.table.display, err: error, failures, retryInMs, outcomes },
        `writing handler outcomes failed; retrying in ${retryInMs} ms`,
      )
    },
  })
}
