import { runPublishConformance, serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import { type KyselyTransaction, publish, publishMany } from '@outboxkit/kysely'
import { pgBackend } from '@outboxkit/pg'
import { type ControlledTransaction, Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'

// The controlled style: db.startTransaction().execute(), commit() / rollback(), and savepoints.
runPublishConformance<KyselyTransaction>({
  name: 'kysely',
  label: 'kysely (ControlledTransaction)',
  publish,
  publishMany,
  async setup() {
    const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 25 })
    const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) })
    const inspector = serverInspector()
    return {
      backend: pgBackend({ pool }),
      inspect: (text, params) => inspector.query(text, params),
      async transaction(fn) {
        const trx = await db.startTransaction().execute()
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
      async refusedHandles() {
        const committed = await db.startTransaction().execute()
        await committed.commit().execute()
        const rolledBack = await db.startTransaction().execute()
        await rolledBack.rollback().execute()
        return [
          { label: 'the root Kysely instance', handle: db },
          { label: 'a committed ControlledTransaction', handle: committed },
          { label: 'a rolled-back ControlledTransaction', handle: rolledBack },
        ]
      },
      async teardown() {
        await inspector.close()
        await db.destroy()
      },
    }
  },
})
