import { describe, OutboxError, toOutboxError } from '@outboxkit/core'
import type postgres from 'postgres'

/**
 * The `sql` that postgres.js hands to `sql.begin(async (tx) => ...)` or to
 * `tx.savepoint(async (sp) => ...)`: the only handle `publish` accepts.
 */
export type PostgresJsTransaction = postgres.TransactionSql<any>

/** The adapter name in error messages: `[outboxkit] [postgres-js] ...`. */
export const ADAPTER = 'postgres-js'

/**
 * The probe: a savepoint that is released at once. PostgreSQL refuses SAVEPOINT outside a
 * transaction block (SQLSTATE 25P01), also inside a multi-statement query in autocommit, and
 * refuses everything in a failed transaction (25P02). Inside an open transaction it writes
 * nothing and takes no transaction id.
 */
const PROBE = 'SAVEPOINT outboxkit_probe; RELEASE SAVEPOINT outboxkit_probe'

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

/** Refuses every handle whose postgres.js API says it is not a transaction `sql`. Free: no SQL. */
function checkShape(handle: unknown): PostgresJsTransaction {
  if (typeof handle !== 'function') {
    const o = handle as Shape | null | undefined
    if (
      o &&
      typeof o === 'object' &&
      (typeof o.transaction === 'function' || typeof o.execute === 'function')
    ) {
      throw refuse(
        `${describe(handle)} (an ORM or query builder object: use its own outboxkit adapter, e.g. @outboxkit/kysely or @outboxkit/drizzle)`,
      )
    }
    throw refuse(describe(handle))
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

/**
 * Returns `handle` as an open postgres.js transaction, or throws `OutboxError('NOT_IN_TRANSACTION')`.
 *
 * 1. Shape, no SQL: only a `TransactionSql` has `savepoint` and no `begin` (root `sql`) or
 *    `release` (`sql.reserve()`).
 * 2. One round trip, on the transaction's own connection: a savepoint released at once. postgres.js
 *    keeps no state of its own to tell a live transaction `sql` from one whose transaction already
 *    committed or rolled back (it then runs queries in autocommit on the same connection), so the
 *    database is asked. Fails with 25P01 when no transaction is open, 25P02 when it failed.
 *
 * Nothing is written either way.
 */
export async function checkTransaction(handle: unknown): Promise<PostgresJsTransaction> {
  const tx = checkShape(handle)
  try {
    await tx.unsafe(PROBE).simple()
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code
    if (code === '25P01') {
      throw refuse(
        'a transaction sql whose transaction already committed or rolled back (postgres.js would run the statement in autocommit)',
      )
    }
    if (code === '25P02') {
      throw refuse(
        'a transaction that failed (an earlier statement raised an error, SQLSTATE 25P02); it can only roll back',
      )
    }
    throw toOutboxError(err, ADAPTER, 'the transaction check of publish')
  }
  return tx
}
