import { sqliteInspector } from '@outboxkit/conformance'
import type { DrizzleSqliteTransaction } from '@outboxkit/drizzle'
import { sqliteBackend } from '@outboxkit/sqlite'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { drizzle as sqliteProxyDrizzle } from 'drizzle-orm/sqlite-proxy'
import { asyncTransactions, tempDrizzleSqlite } from './sqlite-support.js'
import { runDrizzleConformance } from './support/conformance.js'

// The suite's transactions are async: see asyncTransactions (BEGIN / COMMIT on the db's own
// connection around a Drizzle BetterSQLiteTransaction). sqlite-sync.test.ts runs publish in
// Drizzle's own synchronous db.transaction((tx) => ...).
runDrizzleConformance<DrizzleSqliteTransaction>('drizzle (better-sqlite3)', async () => {
  const s = tempDrizzleSqlite('drizzle_conf')
  const { transaction, savepoint } = asyncTransactions(s.db)
  const other = s.open()
  const closed = s.open()
  const closedTx = await new Promise<unknown>((resolve) => {
    drizzle({ client: closed }).transaction((tx) => {
      resolve(tx)
    })
  })
  closed.close()
  let proxyTx: unknown
  await sqliteProxyDrizzle(async () => ({ rows: [] })).transaction(async (tx) => {
    proxyTx = tx
  })
  return {
    dialect: 'sqlite',
    // The relay on a connection of its own to the file.
    backend: sqliteBackend({ filename: s.file, busyTimeoutMs: 10_000 }),
    inspector: sqliteInspector(s.file),
    transaction,
    savepoint,
    async refusedHandles() {
      if (!other.inTransaction) other.exec('BEGIN')
      return [
        { label: 'the root db (autocommit)', handle: s.db },
        { label: 'the better-sqlite3 Database', handle: s.client },
        { label: 'a Drizzle tx on a closed Database', handle: closedTx },
        { label: 'a root db on another connection inside BEGIN', handle: drizzle({ client: other }) },
        { label: 'a sqlite-proxy transaction (a driver without a transaction state)', handle: proxyTx },
        { label: 'undefined', handle: undefined },
      ]
    },
    close() {
      if (other.inTransaction) other.exec('ROLLBACK')
      s.cleanup()
    },
  }
})
