import { testDatabaseUrl } from '@outboxkit/conformance'
import { endedControlledTransactions, runKyselyConformance } from './support/conformance.js'
import { pgKyselyDatabase } from './support/pg-database.js'

// The controlled style: db.startTransaction().execute(), commit() / rollback(), and savepoints.
runKyselyConformance(undefined, ['ControlledTransaction'], async () =>
  pgKyselyDatabase(testDatabaseUrl(), (db) => ({ refused: () => endedControlledTransactions(db) })),
)
