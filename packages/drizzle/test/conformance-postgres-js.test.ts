import {
  describeThroughPgBouncer,
  POSTGRES_JS_ESCAPES_THROUGH_PGBOUNCER,
  serverInspector,
  testDatabaseUrl,
} from '@outboxkit/conformance'
import type { DrizzleTransaction } from '@outboxkit/drizzle'
import { pgBackend } from '@outboxkit/pg'
import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import { runDrizzleConformance } from './support/conformance.js'

// Through PgBouncer: prepare: false, as postgres.js requires there.
const open =
  (url: string, options: postgres.Options<{}> = {}) =>
  async () => {
    const sql = postgres(url, { max: 25, onnotice: () => {}, ...options })
    const db = drizzle({ client: sql })
    // The relay on a pg pool of its own, which it closes.
    const backend = pgBackend({ connectionString: url, max: 4 })
    return {
      ...(options.prepare === false
        ? {
            undetectableEscapes: {
              afterCommit: POSTGRES_JS_ESCAPES_THROUGH_PGBOUNCER,
              afterRollback: POSTGRES_JS_ESCAPES_THROUGH_PGBOUNCER,
            },
          }
        : {}),
      db,
      backend,
      inspector: serverInspector(),
      refusedHandles: async () => [
        { label: 'the root db', handle: db },
        { label: 'the postgres.js sql', handle: sql },
        { label: 'a postgres.js TransactionSql', handle: await sql.begin(async (tx) => tx) },
        { label: 'undefined', handle: undefined },
      ],
      async close() {
        await backend.close()
        await sql.end()
      },
    }
  }
runDrizzleConformance<DrizzleTransaction>('drizzle (postgres.js)', open(testDatabaseUrl()))

// The same through PgBouncer in transaction mode.
describeThroughPgBouncer('drizzle', (pooled) => {
  runDrizzleConformance<DrizzleTransaction>(
    'drizzle (postgres.js, prepare: false) through PgBouncer',
    open(pooled, { prepare: false }),
  )
})
