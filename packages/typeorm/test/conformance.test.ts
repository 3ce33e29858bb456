import { describeThroughPgBouncer, serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import { pgBackend } from '@outboxkit/pg'
import pg from 'pg'
import { DataSource } from 'typeorm'
import {
  endedHandles,
  queryRunners,
  runTypeormConformance,
  serverHandles,
  type TypeormDatabase,
} from './support/conformance.js'

// PostgreSQL: a DataSource and the handles that are not open transactions, the same for both runs.
// `holdsTransactions: false` (through PgBouncer) leaves out the handles that keep a transaction open
// until teardown: each pins one of its 3 server connections for the whole suite, and four would
// starve it. The direct run refuses them.
const open =
  (url: string, { holdsTransactions = true } = {}) =>
  async (): Promise<TypeormDatabase> => {
    const dataSource = new DataSource({ type: 'postgres', url, poolSize: 30 })
    await dataSource.initialize()
    const pool = new pg.Pool({ connectionString: url, max: 10 })
    const inspector = serverInspector()
    const { runner, releaseAll } = queryRunners(dataSource)
    return {
      dataSource,
      backend: pgBackend({ pool }),
      inspect: (text, params) => inspector.query(text, params),
      async refusedHandles() {
        if (!holdsTransactions) return endedHandles(dataSource, runner)
        const failed = runner()
        await failed.startTransaction()
        await failed.query('SELECT 1/0').catch(() => {})
        return [
          ...(await endedHandles(dataSource, runner)),
          ...(await serverHandles(runner, { client: 'pg client' })),
          { label: 'a QueryRunner whose transaction failed', handle: failed },
        ]
      },
      async teardown() {
        await releaseAll()
        await inspector.close()
        await pool.end()
        await dataSource.destroy()
      },
    }
  }
runTypeormConformance(undefined, open(testDatabaseUrl()))

// The same, TypeORM's pool and the relay's through PgBouncer in transaction mode.
describeThroughPgBouncer('typeorm', (pooled) => {
  runTypeormConformance('through PgBouncer', open(pooled, { holdsTransactions: false }))
})
