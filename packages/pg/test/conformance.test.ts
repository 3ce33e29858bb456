import {
  inPgTransaction,
  inspectedBy,
  runBackendConformance,
  runPublishConformance,
  serverInspector,
  sqlSavepoint,
  testDatabaseUrl,
} from '@outboxkit/conformance'
import { type PgTransactionClient, pgBackend, publish, publishMany } from '@outboxkit/pg'
import pg from 'pg'

runPublishConformance<PgTransactionClient>({
  name: 'pg',
  publish,
  publishMany,
  async setup() {
    const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 25 })
    const autocommit = await pool.connect()
    const unconnected = new pg.Client({ connectionString: testDatabaseUrl() })
    const checkedOut: pg.PoolClient[] = [autocommit]
    return {
      backend: pgBackend({ pool }),
      transaction: (fn) => inPgTransaction(pool, fn),
      savepoint: sqlSavepoint((client, sql) => client.query(sql)),
      async refusedHandles() {
        const aborted = await pool.connect()
        checkedOut.push(aborted)
        await aborted.query('BEGIN')
        await aborted.query('SELECT 1/0').catch(() => {})
        return [
          { label: 'a pg Pool', handle: pool },
          { label: 'a pooled client in autocommit', handle: autocommit },
          { label: 'a client that was never connected', handle: unconnected },
          { label: 'a client in a failed transaction', handle: aborted },
          { label: 'null', handle: null },
          { label: 'a plain object', handle: { query: () => {} } },
        ]
      },
      ...inspectedBy(serverInspector(), async () => {
        for (const c of checkedOut) {
          await c.query('ROLLBACK').catch(() => {})
          c.release()
        }
        await pool.end()
      }),
    }
  },
})

runBackendConformance({
  name: 'pg',
  setup: async () => ({
    backend: () => pgBackend({ connectionString: testDatabaseUrl(), commandTimeoutMs: 10_000 }),
    supportsListen: true,
    ...inspectedBy(serverInspector()),
  }),
})
