import { describeThroughPgBouncer, serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import { pgBackend } from '@outboxkit/pg'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { heldConnection, type KyselyDatabase, runKyselyConformance } from './support/conformance.js'

// The callback style: db.transaction().execute(async (trx) => ...). Kysely's Transaction has no
// savepoints (see conformance-controlled.test.ts for those).
const open = (url: string) => async (): Promise<KyselyDatabase> => {
  const pool = new pg.Pool({ connectionString: url, max: 25 })
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) })
  const inspector = serverInspector()
  // A db.connection() handle kept open until teardown.
  const held = heldConnection(db)
  return {
    db,
    backend: pgBackend({ pool }),
    inspect: (text, params) => inspector.query(text, params),
    refusedHandles: async () => [
      { label: 'the root Kysely instance', handle: db },
      { label: 'a db.connection() handle', handle: await held.connection },
      { label: 'the root db with a plugin', handle: db.withSchema('public') },
      { label: 'a pg Pool', handle: pool },
      { label: 'null', handle: null },
      { label: 'a string', handle: 'trx' },
    ],
    async teardown() {
      held.release()
      await inspector.close()
      await db.destroy()
    },
  }
}
runKyselyConformance(undefined, ['Transaction'], open(testDatabaseUrl()))

// The same, the pg pool through PgBouncer in transaction mode.
describeThroughPgBouncer('kysely', (pooled) => {
  runKyselyConformance('through PgBouncer', ['Transaction'], open(pooled))
})
