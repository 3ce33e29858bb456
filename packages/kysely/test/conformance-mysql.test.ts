import { mysqlInspector, testMysqlUri } from '@outboxkit/conformance'
import { mysqlBackend } from '@outboxkit/mysql'
import { Kysely, MysqlDialect } from 'kysely'
import { createPool } from 'mysql2'
import { endedControlledTransactions, heldConnection, runKyselyConformance } from './support/conformance.js'

// Kysely's MysqlDialect on a mysql2 pool, which the relay backend borrows too; both styles.
runKyselyConformance('MySQL', ['Transaction', 'ControlledTransaction'], async () => {
  const pool = createPool({ uri: testMysqlUri(), connectionLimit: 25 })
  const db = new Kysely<any>({ dialect: new MysqlDialect({ pool }) })
  const inspector = mysqlInspector()
  // A db.connection() handle kept open until teardown.
  const held = heldConnection(db)
  return {
    db,
    dialect: 'mysql',
    backend: mysqlBackend({ pool: pool.promise() }),
    inspect: (text, params) => inspector.query(text, params),
    refusedHandles: async () => [
      { label: 'the root Kysely instance', handle: db },
      { label: 'a db.connection() handle', handle: await held.connection },
      { label: 'the root db with a plugin', handle: db.withSchema('test') },
      ...(await endedControlledTransactions(db)),
      { label: 'a mysql2 Pool', handle: pool },
      { label: 'null', handle: null },
    ],
    async teardown() {
      held.release()
      await inspector.close()
      await db.destroy()
    },
  }
})
