import { serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import { pgBackend } from '@outboxkit/pg'
import pg from 'pg'
import { DataSource } from 'typeorm'
import { endedHandles, queryRunners, runTypeormConformance, serverHandles } from './support/conformance.js'

// PostgreSQL: a DataSource and the handles that are not open transactions, the same for both runs.
runTypeormConformance(undefined, async () => {
  const dataSource = new DataSource({ type: 'postgres', url: testDatabaseUrl(), poolSize: 30 })
  await dataSource.initialize()
  const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 10 })
  const inspector = serverInspector()
  const { runner, releaseAll } = queryRunners(dataSource)
  return {
    dataSource,
    backend: pgBackend({ pool }),
    inspect: (text, params) => inspector.query(text, params),
    async refusedHandles() {
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
})
