import { OutboxError } from '@outboxkit/core'
import { formatValue } from '@outboxkit/core/adapter'
import type postgres from 'postgres'

/**
 * The `sql` that postgres.js hands to `sql.begin(async (tx) => ...)` or to
 * `tx.savepoint(async (sp) => ...)`: the only handle `publish` accepts.
 */
export type PostgresJsTransaction = postgres.TransactionSql<any>

/** The adapter name in error messages: `[outboxkit] [postgres-js] ...`. */
export const ADAPTER = 'postgres-js'

const HOW =
  'Call it inside sql.begin(async (tx) => { ...; await publish(outbox, tx, message) }) (or tx.savepoint(...)), with the tx of that callback, and await it before the callback returns.'

/** An `OutboxError('NOT_IN_TRANSACTION')` saying what `publish` got instead of an open transaction. */
export function refuse(what: string): OutboxError {
  return new OutboxError(
    'NOT_IN_TRANSACTION',
    `publish needs an open postgres.js transaction, got ${what}. ${HOW} Nothing was written.`,
    { source: ADAPTER },
  )
}

type Shape = {
  unsafe?: unknown
  savepoint?: unknown
  begin?: unknown
  release?: unknown
  execute?: unknown
  transaction?: unknown
}

/**
 * Returns `handle` as a postgres.js transaction `sql`, or throws `OutboxError('NOT_IN_TRANSACTION')`
 * when its postgres.js API says it is not one: only a `TransactionSql` has `savepoint` and no
 * `begin` (the root `sql`) or `release` (`sql.reserve()`). Free: no SQL.
 *
 * The shape cannot tell a live transaction from one that already ended (postgres.js then runs
 * queries in autocommit on the same connection): the guarded publish statement settles that in
 * the database, at no extra round trip (see `publish`).
 */
export function checkTransaction(handle: unknown): PostgresJsTransaction {
  if (typeof handle !== 'function') {
    const o = handle as Shape | null | undefined
    if (
      o &&
      typeof o === 'object' &&
      (typeof o.transaction === 'function' || typeof o.execute === 'function')
    ) {
      throw refuse(
        `${formatValue(handle)} (an ORM or query builder object: use its own outboxkit adapter, e.g. @outboxkit/kysely or @outboxkit/drizzle)`,
      )
    }
    throw refuse(formatValue(handle))
  }
  const h = handle as Shape
  if (typeof h.begin === 'function') {
    throw refuse(
      'the root sql of postgres() (it runs each query in autocommit on whichever pooled connection is free, so the message would commit on its own)',
    )
  }
  if (typeof h.release === 'function') {
    throw refuse(
      'a reserved connection from sql.reserve() (postgres.js does not track whether a BEGIN is open on it; use sql.begin instead)',
    )
  }
  if (typeof h.savepoint !== 'function' || typeof h.unsafe !== 'function') {
    throw refuse('a function that is not a postgres.js transaction sql')
  }
  return h as unknown as PostgresJsTransaction
}
