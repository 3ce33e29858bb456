import { OutboxError } from '@outboxkit/core'

/** The adapter name in error messages: `[outboxkit] [drizzle] ...`. */
export const ADAPTER = 'drizzle'

/** How a transaction of the dialect is opened: async for PostgreSQL and MySQL, sync for better-sqlite3. */
export type TransactionStyle = 'async' | 'sync'

const HOW: Record<TransactionStyle, string> = {
  async:
    'Call it with the tx of db.transaction(async (tx) => { ...; await publish(outbox, tx, message) }) and await it before the callback returns.',
  sync: 'Call it with the tx of db.transaction((tx) => { ...; publish(outbox, tx, message) }) inside the callback (better-sqlite3 transactions are synchronous: the row is written before publish returns).',
}

/** The `NOT_IN_TRANSACTION` error for a handle that is not an open Drizzle transaction. */
export function notInTransaction(what: string, style: TransactionStyle = 'async'): OutboxError {
  return new OutboxError(
    'NOT_IN_TRANSACTION',
    `publish needs an open Drizzle transaction, got ${what}. ${HOW[style]} Nothing was written.`,
    { source: ADAPTER },
  )
}
