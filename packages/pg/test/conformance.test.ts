import {
  runBackendConformance,
  runPublishConformance,
  serverInspector,
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
    const inspector = serverInspector()
    const autocommit = await pool.connect()
    const unconnected = new pg.Client({ connectionString: testDatabaseUrl() })
    const checkedOut: pg.PoolClient[] = [autocommit]
    return {
      backend: pgBackend({ pool }),
      inspect: (text, params) => inspector.query(text, params),
      async transaction(fn) {
        const client = await pool.connect()
        try {
          await client.query('BEGIN')
          const result = await fn(client)
          await client.query('COMMIT')
          return result
        } catch (err) {
          await client.query('ROLLBACK')
          throw err
        } finally {
          client.release()
        }
      },
      async savepoint(client, fn) {
        await client.query('SAVEPOINT sp')
        try {
          const result = await fn(client)
          await client.query('RELEASE SAVEPOINT sp')
          return result
        } catch (err) {
          await client.query('ROLLBACK TO SAVEPOINT sp')
          throw err
        }
      },
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
      async teardown() {
        for (const c of checkedOut) {
          await c.query('ROLLBACK').catch(() => {})
          c.release()
        }
        await inspector.close()
        await pool.end()
      },
    }
  },
})

runBackendConformance({
  name: 'pg',
  async setup() {
    const inspector = serverInspector()
    return {
      backend: () => pgBackend({ connectionString: testDatabaseUrl(), commandTimeoutMs: 10_000 }),
      inspect: (text, params) => inspector.query(text, params),
      supportsListen: true,
      teardown: () => inspector.close(),
    }
  },
})
