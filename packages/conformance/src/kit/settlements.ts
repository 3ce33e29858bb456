import type { Outbox, OutboxBackend } from '@outboxkit/core'

/** One claimed row, as a settlement names it. */
export interface ClaimedAttempt {
  id: string
  attempts: number
}

/**
 * Settles `row` as delivered through `backend` (`keepDelivered`: the row stays, in state
 * `delivered`; otherwise it is deleted): the ids the backend applied, fenced ones left out.
 */
export function settleDelivered(
  backend: OutboxBackend,
  outbox: Outbox<any>,
  row: ClaimedAttempt,
  keepDelivered: boolean,
): ReturnType<OutboxBackend['settle']> {
  return backend.settle({
    table: outbox.table,
    keepDelivered,
    settlements: [{ id: row.id, attempts: row.attempts, outcome: 'delivered' }],
  })
}
