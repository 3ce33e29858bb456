import { removeSqliteFile, sqliteInspector, tempSqliteFile } from '@outboxkit/conformance'
import { sqliteBackend } from '@outboxkit/sqlite'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { endedControlledTransactions, runKyselyConformance } from './support/conformance.js'

/**
 * Kysely's SqliteDialect on better-sqlite3, on a database file of its own under the OS temp dir.
 * The callback style's relay shares the dialect's better-sqlite3 connection; the controlled
 * style's (with savepoints) has a connection of its own to the file.
 */
runKyselyConformance('SQLite', ['Transaction', 'ControlledTransaction'], async (style) => {
  const file = tempSqliteFile(style === 'Transaction' ? 'kysely_sqlite' : 'kysely_sqlite_ctl')
  const database = new Database(file)
  database.pragma('journal_mode = WAL')
  database.pragma('busy_timeout = 10000')
  const db = new Kysely<any>({ dialect: new SqliteDialect({ database }) })
  const inspector = sqliteInspector(file)
  const backend =
    style === 'Transaction'
      ? sqliteBackend(database)
      : sqliteBackend({ filename: file, busyTimeoutMs: 10_000 })
  return {
    db,
    dialect: 'sqlite',
    backend,
    inspect: (text, params) => inspector.query(text, params),
    async refusedHandles() {
      // A db.connection() handle holds SQLite's single Kysely connection: taken and given back here.
      const connection = await db.connection().execute(async (conn) => conn)
      return [
        { label: 'the root Kysely instance', handle: db },
        { label: 'a db.connection() handle', handle: connection },
        ...(await endedControlledTransactions(db)),
        { label: 'the better-sqlite3 Database under the dialect', handle: database },
        { label: 'null', handle: null },
      ]
    },
    async teardown() {
      if (style === 'ControlledTransaction') await backend.close()
      await inspector.close()
      await db.destroy()
      removeSqliteFile(file)
    },
  }
})
