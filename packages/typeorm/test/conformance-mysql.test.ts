import { mysqlInspector, testMysqlUri } from '@outboxkit/conformance'
import { mysqlBackend } from '@outboxkit/mysql'
import { DataSource, type QueryRunner } from 'typeorm'
import { endedHandles, queryRunners, runTypeormConformance, serverHandles } from './support/conformance.js'

// A mysql DataSource (MariaDB here) and the handles that are not open transactions, for both runs.
runTypeormConformance('MySQL', async () => {
  const dataSource = new DataSource({ type: 'mysql', url: testMysqlUri(), poolSize: 30 })
  await dataSource.initialize()
  const inspector = mysqlInspector()
  const backend = mysqlBackend({ uri: testMysqlUri(), connectionLimit: 4 })
  const { runner, releaseAll } = queryRunners(dataSource)
  // The released runner's transaction is restarted once before it goes back to the pool.
  const beforeRelease = async (qr: QueryRunner) => {
    await qr.rollbackTransaction()
    await qr.startTransaction()
  }
  return {
    dataSource,
    dialect: 'mysql',
    backend,
    inspect: (text, params) => inspector.query(text, params),
    refusedHandles: async () => [
      ...(await endedHandles(dataSource, runner)),
      ...(await serverHandles(runner, { client: 'mysql2 connection', beforeRelease })),
    ],
    async teardown() {
      await releaseAll()
      await backend.close()
      await inspector.close()
      await dataSource.destroy()
    },
  }
})
