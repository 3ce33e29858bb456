import { serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import type { DrizzleTransaction } from '@outboxkit/drizzle'
import { pgBackend } from '@outboxkit/pg'
import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import { runDrizzleConformance } from './support/conformance.js'

runDrizzleConformance<DrizzleTransaction>('drizzle (postgres.js)', async () => {
  const sql = postgres(testDatabaseUrl(), { max: 25, onnotice: () => {} })
  const db = drizzle({ client: sql })
  // The relay on a pg pool of its own, which it closes.
  const backend = pgBackend({ connectionString: testDatabaseUrl(), max: 4 })
  return {
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
})
