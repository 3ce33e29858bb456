import type { ClaimedRow, Settlement } from '../protocol/backend.js'
import type { WalMove } from '../protocol/wal.js'
import { backoffDelay } from './backoff.js'
import type { Outcome } from './outcome.js'
import type { RelayCollaborators } from './relay-runner.js'
import type { RelayEvents } from './relay-types.js'
import { Settler } from './settler.js'
import { WalSource } from './wal-source.js'

/** How the relay reacts to what the WAL parts report. */
export interface WalReactions {
  freeSlots(): number
  onRows(rows: readonly ClaimedRow[]): void
  /** Outcomes of WAL messages were written (delivered ones need no write). */
  onWritten(batch: readonly Outcome[]): void
  reportError(error: unknown, during: RelayEvents['error']['during']): void
}

/** The slot's source and the settler of its messages. */
export interface WalParts {
  readonly source: WalSource
  readonly settler: Settler
}

/** The move into the table of one WAL message's outcome, or none (delivered, not kept). */
function moveOf(row: ClaimedRow, s: Settlement, keepDelivered: boolean): WalMove | undefined {
  if (s.outcome === 'delivered') {
    return keepDelivered
      ? { row, state: 'delivered', attempts: s.attempts, delayMs: 0, error: null }
      : undefined
  }
  if (s.outcome === 'retry')
    return { row, state: 'pending', attempts: s.attempts, delayMs: s.delayMs, error: s.error }
  return { row, state: 'dead', attempts: s.attempts, delayMs: 0, error: s.error }
}

/** The `last_error` of a message the slot streamed again at or below the dispatch mark. */
export const REPLAY_ERROR =
  'the relay that read this message from the replication slot stopped before settling it (it may have run its handler): read again from the slot and moved into the table'

/**
 * The move of a replayed message (see {@link REPLAY_ERROR}): its attempt is counted, so it is
 * pending with the backoff of attempt 1, or dead when `maxAttempts` is 1. A topic this relay has
 * no handler for was never handed over here: pending, unattempted.
 */
export function replayMoveOf(row: ClaimedRow, c: RelayCollaborators): WalMove {
  const o = c.options
  if (!o.handlers.has(row.topic)) return { row, state: 'pending', attempts: 0, delayMs: 0, error: null }
  if (o.maxAttempts <= 1) return { row, state: 'dead', attempts: 1, delayMs: 0, error: REPLAY_ERROR }
  return { row, state: 'pending', attempts: 1, delayMs: backoffDelay(o.retry, 1), error: REPLAY_ERROR }
}

/**
 * The WAL transport's parts (docs/wal.md): the source that reads the slot, and a settler whose
 * write moves a message that was not delivered into the outbox table (pending with its backoff
 * and attempts, or dead) BEFORE the source may confirm its LSN; a delivered message needs no
 * statement at all.
 */
export function createWalParts(c: RelayCollaborators, on: WalReactions): WalParts {
  const { outbox, options: o, log } = c
  const wal = o.backend.wal!
  const source = new WalSource({
    wal,
    outbox,
    topics: new Set(o.topics),
    log,
    slotWarnBytes: o.slotWarnBytes,
    replayMove: (row) => replayMoveOf(row, c),
    freeSlots: on.freeSlots,
    onRows: on.onRows,
    reportError: (error) => on.reportError(error, 'claim'),
  })
  const settler = new Settler({
    async write(settlements) {
      const moves: WalMove[] = []
      for (const s of settlements) {
        const row = source.rowOf(s.id)
        const move = row && moveOf(row, s, o.keepDelivered)
        if (move) moves.push(move)
      }
      await wal.moveToTable(outbox.table, moves)
      return settlements.map((s) => s.id)
    },
    onWritten: (batch) => {
      on.onWritten(batch)
      source.settled(batch.map((outcome) => outcome.entry.row))
    },
    onFailed: (error, failures, retryInMs, outcomes) => {
      on.reportError(error, 'settle')
      log.log(
        'warn',
        { table: outbox.table.display, err: error, failures, retryInMs, outcomes },
        `moving failed WAL messages into the table failed; retrying in ${retryInMs} ms (the slot is not confirmed past them)`,
      )
    },
  })
  return { source, settler }
}
