import { createSqlitePublisher } from '@outboxkit/core/adapter'
import { ADAPTER, checkTransaction, type KyselyTransaction, runRaw } from './transaction.js'

/**
 * `publish` / `publishMany` on a Kysely transaction of a SQLite dialect: one
 * `INSERT ... RETURNING`, plus one SELECT only when a `dedupKey` already existed. Kysely's
 * SQLite driver is asynchronous, so the row is written once the returned Promise resolves (await
 * it inside the transaction). Kysely does not expose its database, so the in-process wake of
 * relays goes out on the next turn of the event loop rather than after the commit.
 */
export const sqlitePublisher = createSqlitePublisher<KyselyTransaction>({
  name: ADAPTER,
  checkTransaction,
  all: async (tx, statement) => (await runRaw(tx, statement.sql, statement.params)).rows,
})
