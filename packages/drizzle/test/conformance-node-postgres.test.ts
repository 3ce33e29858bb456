import { describeThroughPgBouncer, serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import type { DrizzleTransaction } from '@outboxkit/drizzle'
import { pgBackend } from '@outboxkit/pg'
import { sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import pg from 'pg'
import { runDrizzleConformance } from './support/conformance.js'

const open = (url: string) => async () => {
  const pool = new pg.Pool({ connectionString: url, max: 25 })
  const db = drizzle({ client: pool })
  // A db on a single pg.Client that the suite leaves in autocommit.
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  // A transaction left open in a failed state (status 'E') per call of refusedHandles (the
  // publish and the inbox refusal tests each ask), released at teardown.
  const aborts: (() => void)[] = []
  const failedTxs: Promise<unknown>[] = []
  return {
    db,
    backend: pgBackend({ pool }),
    inspector: serverInspector(),
    async refusedHandles() {
      const failed = await new Promise<DrizzleTransaction>((resolve) => {
        failedTxs.push(
          db
            .transaction(async (tx) => {
              await tx.execute(sql`SELECT 1/0`).catch(() => {})
              resolve(tx)
              await new Promise<void>((done) => {
                aborts.push(done)
              })
            })
            .catch(() => {}),
        )
      })
      return [
        { label: 'the root db on a Pool', handle: db },
        { label: 'the root db on a single Client', handle: drizzle({ client }) },
        { label: 'a transaction that failed (status E)', handle: failed },
        { label: 'the pg Pool', handle: pool },
        { label: 'null', handle: null },
        { label: 'a plain object', handle: { execute: () => {} } },
      ]
    },
    async close() {
      for (const abort of aborts) abort()
      await Promise.all(failedTxs)
      await client.end()
      await pool.end()
    },
  }
}
runDrizzleConformance<DrizzleTransaction>('drizzle (node-postgres)', open(testDatabaseUrl()))

// The same, the pg pool through PgBouncer in transaction mode.
describeThroughPgBouncer('drizzle', (pooled) => {
  runDrizzleConformance<DrizzleTransaction>('drizzle (node-postgres) through PgBouncer', open(pooled))
})
