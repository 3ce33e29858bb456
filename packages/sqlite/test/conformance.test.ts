import { runBackendConformance, runPublishConformance, sqliteInspector } from '@outboxkit/conformance'
import type { OutboxBackend } from '@outboxkit/core'
import { publish, publishMany, type SqliteDatabase, sqliteBackend } from '@outboxkit/sqlite'
import { tempDatabase } from './support.js'

/**
 * The suites' `transaction(fn)` is asynchronous: BEGIN / COMMIT / ROLLBACK on the Database, one
 * transaction at a time (a better-sqlite3 connection has one transaction, so concurrent callers
 * take turns, as an async wrapper over better-sqlite3 does).
 */
function transactions(db: SqliteDatabase) {
  let queue: Promise<unknown> = Promise.resolve()
  return <T>(fn: (tx: SqliteDatabase) => Promise<T>): Promise<T> => {
    const run = async () => {
      db.exec('BEGIN')
      try {
        const result = await fn(db)
        db.exec('COMMIT')
        return result
      } catch (err) {
        if (db.inTransaction) db.exec('ROLLBACK')
        throw err
      }
    }
    const next = queue.then(run, run)
    queue = next.catch(() => {})
    return next
  }
}

runPublishConformance<SqliteDatabase>({
  name: 'sqlite',
  publish,
  publishMany,
  async setup() {
    const temp = tempDatabase('conf_publish')
    const db = temp.open()
    const inspector = sqliteInspector(temp.file)
    const closed = temp.open()
    closed.close()
    return {
      dialect: 'sqlite',
      backend: sqliteBackend(db),
      inspect: (text, params) => inspector.query(text, params),
      transaction: transactions(db),
      async savepoint(tx, fn) {
        tx.exec('SAVEPOINT sp')
        try {
          const result = await fn(tx)
          tx.exec('RELEASE SAVEPOINT sp')
          return result
        } catch (err) {
          tx.exec('ROLLBACK TO SAVEPOINT sp; RELEASE SAVEPOINT sp')
          throw err
        }
      },
      async refusedHandles() {
        return [
          { label: 'the Database in autocommit', handle: db },
          { label: 'a closed Database', handle: closed },
          { label: 'a prepared statement', handle: db.prepare('SELECT 1') },
          { label: 'a transaction function', handle: db.transaction(() => {}) },
          { label: 'undefined', handle: undefined },
          { label: 'a string', handle: 'tx' },
        ]
      },
      async teardown() {
        await inspector.close()
        temp.cleanup()
      },
    }
  },
})

runBackendConformance({
  name: 'sqlite',
  async setup() {
    const temp = tempDatabase('conf_backend')
    const db = temp.open()
    const inspector = sqliteInspector(temp.file)
    const backends: OutboxBackend[] = []
    return {
      dialect: 'sqlite',
      // Each simulated relay has its own connection to the file, as separate processes would.
      backend() {
        const backend = sqliteBackend({ filename: temp.file })
        backends.push(backend)
        return backend
      },
      inspect: (text, params) => inspector.query(text, params),
      supportsListen: true,
      // The in-process wake: a publish committed in this process.
      async wake(outbox) {
        db.transaction(() => {
          void publish(outbox, db, { topic: 'wake', payload: 1 })
        })()
      },
      async teardown() {
        await Promise.all(backends.map((b) => b.close()))
        await inspector.close()
        temp.cleanup()
      },
    }
  },
})
