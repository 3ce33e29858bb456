import { serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import type { DrizzleTransaction } from '@outboxkit/drizzle'
import { pgBackend } from '@outboxkit/pg'
import { sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import pg from 'pg'
import { runDrizzleConformance } from './support/conformance.js'

runDrizzleConformance<DrizzleTransaction>('drizzle (node-postgres)', async () => {
  const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 25 })
  const db = drizzle({ client: pool })
  // A db on a single pg.Client that the suite leaves in autocommit.
  const client = new pg.Client({ connectionString: testDatabaseUrl() })
  await client.connect()
  // A transaction left open in a failed state (status 'E'), released at teardown.
  let abortFailed: () => void = () => {}
  let failedTx: Promise<unknown> = Promise.resolve()
  return {
    db,
    backend: pgBackend({ pool }),
    inspector: serverInspector(),
    async refusedHandles() {
      const failed = await new Promise<DrizzleTransaction>((resolve) => {
        failedTx = db
          .transaction(async (tx) => {
            await tx.execute(sql`SELECT 1/0`).catch(() => {})
            resolve(tx)
            await new Promise<void>((done) => {
              abortFailed = done
            })
          })
          .catch(() => {})
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
      abortFailed()
      await failedTx
      await client.end()
      await pool.end()
    },
  }
})
