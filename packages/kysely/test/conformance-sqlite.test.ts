import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  type RefusedHandle,
  runPublishConformance,
  sqliteInspector,
  uniqueTableName,
} from '@outboxkit/conformance'
import { type KyselyTransaction, publish, publishMany } from '@outboxkit/kysely'
import { sqliteBackend } from '@outboxkit/sqlite'
import Database from 'better-sqlite3'
import { type ControlledTransaction, Kysely, SqliteDialect } from 'kysely'

/** Kysely's SqliteDialect on better-sqlite3, on a database file of its own under the OS temp dir. */
function open(prefix: string) {
  const file = join(tmpdir(), `${uniqueTableName(prefix)}.db`)
  const database = new Database(file)
  database.pragma('journal_mode = WAL')
  database.pragma('busy_timeout = 10000')
  const db = new Kysely<any>({ dialect: new SqliteDialect({ database }) })
  const inspector = sqliteInspector(file)
  return {
    file,
    database,
    db,
    inspect: (text: string, params?: unknown[]) => inspector.query(text, params),
    async teardown() {
      await inspector.close()
      await db.destroy()
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
    },
  }
}

/** Handles that are not open transactions, on either style. */
async function refusedHandles(db: Kysely<any>, database: Database.Database): Promise<RefusedHandle[]> {
  // A db.connection() handle holds SQLite's single Kysely connection: taken and given back here.
  const connection = await db.connection().execute(async (conn) => conn)
  const committed = await db.startTransaction().execute()
  await committed.commit().execute()
  const rolledBack = await db.startTransaction().execute()
  await rolledBack.rollback().execute()
  return [
    { label: 'the root Kysely instance', handle: db },
    { label: 'a db.connection() handle', handle: connection },
    { label: 'a committed ControlledTransaction', handle: committed },
    { label: 'a rolled-back ControlledTransaction', handle: rolledBack },
    { label: 'the better-sqlite3 Database under the dialect', handle: database },
    { label: 'null', handle: null },
  ]
}

// The callback style; the relay shares the dialect's better-sqlite3 connection.
runPublishConformance<KyselyTransaction>({
  name: 'kysely',
  label: 'kysely (SQLite, Transaction)',
  publish,
  publishMany,
  async setup() {
    const s = open('kysely_sqlite')
    return {
      dialect: 'sqlite',
      backend: sqliteBackend(s.database),
      inspect: s.inspect,
      transaction: (fn) => s.db.transaction().execute(fn),
      refusedHandles: () => refusedHandles(s.db, s.database),
      teardown: s.teardown,
    }
  },
})

// The controlled style with savepoints; the relay on a connection of its own to the file.
runPublishConformance<KyselyTransaction>({
  name: 'kysely',
  label: 'kysely (SQLite, ControlledTransaction)',
  publish,
  publishMany,
  async setup() {
    const s = open('kysely_sqlite_ctl')
    const backend = sqliteBackend({ filename: s.file, busyTimeoutMs: 10_000 })
    return {
      dialect: 'sqlite',
      backend,
      inspect: s.inspect,
      async transaction(fn) {
        const trx = await s.db.startTransaction().execute()
        try {
          const result = await fn(trx)
          await trx.commit().execute()
          return result
        } catch (err) {
          if (!trx.isCommitted && !trx.isRolledBack) await trx.rollback().execute()
          throw err
        }
      },
      async savepoint(tx, fn) {
        const sp = await (tx as ControlledTransaction<any>).savepoint('sp').execute()
        try {
          const result = await fn(sp)
          await sp.releaseSavepoint('sp').execute()
          return result
        } catch (err) {
          await sp.rollbackToSavepoint('sp').execute()
          throw err
        }
      },
      refusedHandles: () => refusedHandles(s.db, s.database),
      async teardown() {
        await backend.close()
        await s.teardown()
      },
    }
  },
})
