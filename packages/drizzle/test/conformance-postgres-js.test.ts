import { runPublishConformance, serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import { type DrizzleTransaction, publish, publishMany } from '@outboxkit/drizzle'
import { pgBackend } from '@outboxkit/pg'
import { drizzle } from 'drizzle-orm/postgres-js'
import pg from 'pg'
import postgres from 'postgres'

runPublishConformance<DrizzleTransaction>({
  name: 'drizzle',
  label: 'drizzle (postgres.js)',
  publish,
  publishMany,
  async setup() {
    const sql = postgres(testDatabaseUrl(), { max: 25, onnotice: () => {} })
    const db = drizzle({ client: sql })
    const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 })
    const inspector = serverInspector()
    return {
      backend: pgBackend({ pool }),
      inspect: (text, params) => inspector.query(text, params),
      transaction: (fn) => db.transaction(fn),
      savepoint: (tx, fn) => tx.transaction(fn),
      async refusedHandles() {
        return [
          { label: 'the root db', handle: db },
          { label: 'the postgres.js sql', handle: sql },
          { label: 'a postgres.js TransactionSql', handle: await sql.begin(async (tx) => tx) },
          { label: 'undefined', handle: undefined },
        ]
      },
      async teardown() {
        await inspector.close()
        await pool.end()
        await sql.end()
      },
    }
  },
})
