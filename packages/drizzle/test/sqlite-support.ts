import { removeSqliteFile, tempSqliteFile } from '@outboxkit/conformance'
import type { DrizzleSqliteTransaction } from '@outboxkit/drizzle'
import Database from 'better-sqlite3'
import { sql } from 'drizzle-orm'
import { type BetterSQLite3Database, BetterSQLiteTransaction, drizzle } from 'drizzle-orm/better-sqlite3'

/** What {@link tempDrizzleSqlite} returns. */
export interface TempDrizzleSqlite {
  file: string
  client: Database.Database
  db: BetterSQLite3Database
  /** Another connection to the file. */
  open(): Database.Database
  cleanup(): void
}

/** A SQLite file under the OS temp dir, a Drizzle db on it, and cleanup. */
export function tempDrizzleSqlite(prefix: string): TempDrizzleSqlite {
  const file = tempSqliteFile(prefix)
  const opened: Database.Database[] = []
  const open = () => {
    const client = new Database(file)
    client.pragma('journal_mode = WAL')
    client.pragma('busy_timeout = 10000')
    opened.push(client)
    return client
  }
  const client = open()
  return {
    file,
    client,
    db: drizzle({ client }),
    /** Another connection to the file. */
    open,
    cleanup() {
      for (const c of opened) if (c.open) c.close()
      removeSqliteFile(file)
    },
  }
}

type DbInternals = { dialect: unknown; session: unknown; _: { schema: unknown } }

/**
 * An async transaction on a Drizzle better-sqlite3 db, for the conformance suite, whose callbacks
 * are async (Drizzle's own `db.transaction` is synchronous and better-sqlite3 refuses a callback
 * that returns a Promise). It does what Drizzle's `BetterSQLiteSession.transaction` does, with the
 * commit after the callback's Promise settles: BEGIN on the db's connection, a Drizzle
 * `BetterSQLiteTransaction` on the db's own session, COMMIT or ROLLBACK. One at a time (one
 * connection has one transaction), so concurrent callers take turns.
 */
export function asyncTransactions(db: BetterSQLite3Database) {
  const { dialect, session } = db as unknown as DbInternals
  let queue: Promise<unknown> = Promise.resolve()
  const transaction = <T>(fn: (tx: DrizzleSqliteTransaction) => Promise<T>): Promise<T> => {
    const run = async () => {
      const tx = new BetterSQLiteTransaction('sync', dialect as never, session as never, undefined)
      db.run(sql`BEGIN`)
      try {
        const result = await fn(tx)
        db.run(sql`COMMIT`)
        return result
      } catch (err) {
        if ((session as { client: Database.Database }).client.inTransaction) db.run(sql`ROLLBACK`)
        throw err
      }
    }
    const next = queue.then(run, run)
    queue = next.catch(() => {})
    return next
  }
  /** A savepoint: SAVEPOINT, a nested Drizzle transaction, RELEASE or ROLLBACK TO (as Drizzle's `tx.transaction`). */
  const savepoint = async <T>(
    tx: DrizzleSqliteTransaction,
    fn: (tx: DrizzleSqliteTransaction) => Promise<T>,
  ): Promise<T> => {
    const nested = tx as unknown as { nestedIndex: number }
    const name = `sp${nested.nestedIndex}`
    const inner = new BetterSQLiteTransaction(
      'sync',
      dialect as never,
      session as never,
      undefined,
      nested.nestedIndex + 1,
    )
    tx.run(sql.raw(`SAVEPOINT ${name}`))
    try {
      const result = await fn(inner)
      tx.run(sql.raw(`RELEASE SAVEPOINT ${name}`))
      return result
    } catch (err) {
      tx.run(sql.raw(`ROLLBACK TO SAVEPOINT ${name}`))
      tx.run(sql.raw(`RELEASE SAVEPOINT ${name}`))
      throw err
    }
  }
  return { transaction, savepoint }
}
