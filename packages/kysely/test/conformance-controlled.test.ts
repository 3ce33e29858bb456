import { serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import { pgBackend } from '@outboxkit/pg'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { endedControlledTransactions, runKyselyConformance } from './support/conformance.js'

// The controlled style: db.startTransaction().execute(), commit() / rollback(), and savepoints.
runKyselyConformance(undefined, ['ControlledTransaction'], async () => {
  const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 25 })
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) })
  const inspector = serverInspector()
  return {
    db,
    backend: pgBackend({ pool }),
    inspect: (text, params) => inspector.query(text, params),
    refusedHandles: async () => [
      { label: 'the root Kysely instance', handle: db },
      ...(await endedControlledTransactions(db)),
    ],
    async teardown() {
      await inspector.close()
      await db.destroy()
    },
  }
})
