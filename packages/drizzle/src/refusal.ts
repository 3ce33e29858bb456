import { OutboxError } from '@outboxkit/core'

/** The adapter name in error messages: `[outboxkit] [drizzle] ...`. */
export const ADAPTER = 'drizzle'

/** The `NOT_IN_TRANSACTION` error for a handle that is not an open Drizzle transaction. */
export function notInTransaction(what: string): OutboxError {
  return new OutboxError(
    'NOT_IN_TRANSACTION',
    `publish needs an open Drizzle transaction, got ${what}. Call it with the tx of db.transaction(async (tx) => { ...; await publish(outbox, tx, message) }) and await it before the callback returns. Nothing was written.`,
    { source: ADAPTER },
  )
}
