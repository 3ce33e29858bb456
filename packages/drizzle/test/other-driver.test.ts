import { serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import type { DrizzleTransaction } from '@outboxkit/drizzle'
import { pgBackend } from '@outboxkit/pg'
import pg from 'pg'
import { minimalDrizzle } from './minimal-driver.js'
import { runDrizzleConformance } from './support/conformance.js'

// A Drizzle driver the adapter does not know gets core's guarded statement: the whole suite,
// escaped handles included, must hold for it too.
runDrizzleConformance<DrizzleTransaction>('drizzle (minimal test driver)', async () => {
  const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 25 })
  const checkedOut: pg.PoolClient[] = []
  // One pooled client per transaction, released after it: a kept tx then runs in autocommit.
  const transaction = async <T>(fn: (tx: DrizzleTransaction) => Promise<T>): Promise<T> => {
    const client = await pool.connect()
    try {
      return await minimalDrizzle(client).transaction((tx) => fn(tx as unknown as DrizzleTransaction))
    } finally {
      client.release()
    }
  }
  return {
    backend: pgBackend({ pool }),
    inspector: serverInspector(),
    transaction,
    savepoint: (tx, fn) => tx.transaction((inner) => fn(inner as DrizzleTransaction)),
    async refusedHandles() {
      const client = await pool.connect()
      checkedOut.push(client)
      return [
        { label: 'the root db of the minimal driver', handle: minimalDrizzle(client) },
        { label: 'null', handle: null },
      ]
    },
    async close() {
      for (const c of checkedOut) c.release()
      await pool.end()
    },
  }
})
