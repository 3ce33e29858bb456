import { runPublishConformance, serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import { type KyselyTransaction, publish, publishMany } from '@outboxkit/kysely'
import { pgBackend } from '@outboxkit/pg'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'

// The callback style: db.transaction().execute(async (trx) => ...). Kysely's Transaction has no
// savepoints (see conformance-controlled.test.ts for those).
runPublishConformance<KyselyTransaction>({
  name: 'kysely',
  label: 'kysely (Transaction)',
  publish,
  publishMany,
  async setup() {
    const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 25 })
    const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) })
    const inspector = serverInspector()
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
      backend: pgBackend({ pool }),
      inspect: (text, params) => inspector.query(text, params),
      transaction: (fn) => db.transaction().execute(fn),
      async refusedHandles() {
        return [
          { label: 'the root Kysely instance', handle: db },
          { label: 'a db.connection() handle', handle: await connection },
          { label: 'the root db with a plugin', handle: db.withSchema('public') },
          { label: 'a pg Pool', handle: pool },
          { label: 'null', handle: null },
          { label: 'a string', handle: 'trx' },
        ]
      },
      async teardown() {
        releaseConnection?.()
        await inspector.close()
        await db.destroy()
      },
    }
  },
})
