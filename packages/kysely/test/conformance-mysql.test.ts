import {
  mysqlInspector,
  type RefusedHandle,
  runPublishConformance,
  testMysqlUri,
} from '@outboxkit/conformance'
import { type KyselyTransaction, publish, publishMany } from '@outboxkit/kysely'
import { mysqlBackend } from '@outboxkit/mysql'
import { type ControlledTransaction, Kysely, MysqlDialect } from 'kysely'
import { createPool } from 'mysql2'

/** Kysely's MysqlDialect on a mysql2 pool, which the relay backend borrows too. */
function open() {
  const pool = createPool({ uri: testMysqlUri(), connectionLimit: 25 })
  const db = new Kysely<any>({ dialect: new MysqlDialect({ pool }) })
  const inspector = mysqlInspector()
  // A db.connection() handle kept open until teardown.
  let releaseConnection!: () => void
  const connection = new Promise<Kysely<any>>((resolve) => {
    void db.connection().execute(
      (conn) =>
        new Promise<void>((release) => {
          releaseConnection = release
          resolve(conn)
        }),
    )
  })
  return {
    db,
    dialect: 'mysql' as const,
    backend: mysqlBackend({ pool: pool.promise() }),
    inspect: (text: string, params?: unknown[]) => inspector.query(text, params),
    async refusedHandles(): Promise<RefusedHandle[]> {
      const committed = await db.startTransaction().execute()
      await committed.commit().execute()
      const rolledBack = await db.startTransaction().execute()
      await rolledBack.rollback().execute()
      return [
        { label: 'the root Kysely instance', handle: db },
        { label: 'a db.connection() handle', handle: await connection },
        { label: 'the root db with a plugin', handle: db.withSchema('test') },
        { label: 'a committed ControlledTransaction', handle: committed },
        { label: 'a rolled-back ControlledTransaction', handle: rolledBack },
        { label: 'a mysql2 Pool', handle: pool },
        { label: 'null', handle: null },
      ]
    },
    async teardown() {
      releaseConnection?.()
      await inspector.close()
      await db.destroy()
    },
  }
}

// The callback style: db.transaction().execute(async (trx) => ...).
runPublishConformance<KyselyTransaction>({
  name: 'kysely',
  label: 'kysely (MySQL, Transaction)',
  publish,
  publishMany,
  async setup() {
    const s = open()
    return { ...s, transaction: (fn) => s.db.transaction().execute(fn) }
  },
})

// The controlled style: db.startTransaction().execute(), commit() / rollback(), and savepoints.
runPublishConformance<KyselyTransaction>({
  name: 'kysely',
  label: 'kysely (MySQL, ControlledTransaction)',
  publish,
  publishMany,
  async setup() {
    const s = open()
    return {
      ...s,
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
    }
  },
})
