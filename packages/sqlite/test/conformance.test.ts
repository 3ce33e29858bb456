import {
  inspectedBy,
  runBackendConformance,
  runPublishConformance,
  runTransaction,
  serialQueue,
  sqliteInspector,
  sqlSavepoint,
} from '@outboxkit/conformance'
import type { OutboxBackend } from '@outboxkit/core'
import {
  inboxHandler,
  processOnce,
  publish,
  publishMany,
  type SqliteDatabase,
  sqliteBackend,
} from '@outboxkit/sqlite'
import { tempDatabase } from './support.js'

/**
 * The suites' `transaction(fn)` is asynchronous: BEGIN / COMMIT / ROLLBACK on the Database, one
 * transaction at a time (a better-sqlite3 connection has one transaction, so concurrent callers
 * take turns, as an async wrapper over better-sqlite3 does).
 */
function transactions(db: SqliteDatabase) {
  const serial = serialQueue()
  const exec = (sql: string) => () => db.exec(sql)
  return <T>(fn: (tx: SqliteDatabase) => Promise<T>): Promise<T> =>
    serial(() =>
      runTransaction(
        {
          begin: exec('BEGIN'),
          commit: exec('COMMIT'),
          rollback: () => db.inTransaction && db.exec('ROLLBACK'),
        },
        () => fn(db),
      ),
    )
}

runPublishConformance<SqliteDatabase>({
  name: 'sqlite',
  publish,
  publishMany,
  processOnce,
  async setup() {
    const temp = tempDatabase('conf_publish')
    const db = temp.open()
    const closed = temp.open()
    closed.close()
    return {
      dialect: 'sqlite',
      backend: sqliteBackend(db),
      inboxHandler: (inbox, fn) => inboxHandler(inbox, db, fn),
      transaction: transactions(db),
      savepoint: sqlSavepoint((tx, sql) => tx.exec(sql), {
        rollbackSql: 'ROLLBACK TO SAVEPOINT sp; RELEASE SAVEPOINT sp',
      }),
      refusedHandles: async () => [
        { label: 'the Database in autocommit', handle: db },
        { label: 'a closed Database', handle: closed },
        { label: 'a prepared statement', handle: db.prepare('SELECT 1') },
        { label: 'a transaction function', handle: db.transaction(() => {}) },
        { label: 'undefined', handle: undefined },
        { label: 'a string', handle: 'tx' },
      ],
      ...inspectedBy(sqliteInspector(temp.file), () => temp.cleanup()),
    }
  },
})

runBackendConformance({
  name: 'sqlite',
  async setup() {
    const temp = tempDatabase('conf_backend')
    const db = temp.open()
    const backends: OutboxBackend[] = []
    return {
      dialect: 'sqlite',
      // Each simulated relay has its own connection to the file, as separate processes would.
      backend() {
        const backend = sqliteBackend({ filename: temp.file })
        backends.push(backend)
        return backend
      },
      supportsListen: true,
      // The in-process wake: a publish committed in this process.
      async wake(outbox) {
        db.transaction(() => {
          void publish(outbox, db, { topic: 'wake', payload: 1 })
        })()
      },
      ...inspectedBy(sqliteInspector(temp.file), async () => {
        await Promise.all(backends.map((b) => b.close()))
        temp.cleanup()
      }),
    }
  },
})
