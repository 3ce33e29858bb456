import { describeThroughPgBouncer, testDatabaseUrl } from '@outboxkit/conformance'
import { heldConnection, type KyselyDatabase, runKyselyConformance } from './support/conformance.js'
import { pgKyselyDatabase } from './support/pg-database.js'

// The callback style: db.transaction().execute(async (trx) => ...). Kysely's Transaction has no
// savepoints (see conformance-controlled.test.ts for those).
const open = (url: string) => async (): Promise<KyselyDatabase> =>
  pgKyselyDatabase(url, (db, pool) => {
    // A db.connection() handle kept open until teardown.
    const held = heldConnection(db)
    return {
      refused: async () => [
        { label: 'a db.connection() handle', handle: await held.connection },
        { label: 'the root db with a plugin', handle: db.withSchema('public') },
        { label: 'a pg Pool', handle: pool },
        { label: 'null', handle: null },
        { label: 'a string', handle: 'trx' },
      ],
      release: () => held.release(),
    }
  })
runKyselyConformance(undefined, ['Transaction'], open(testDatabaseUrl()))

// The same, the pg pool through PgBouncer in transaction mode.
describeThroughPgBouncer('kysely', (pooled) => {
  runKyselyConformance('through PgBouncer', ['Transaction'], open(pooled))
})
