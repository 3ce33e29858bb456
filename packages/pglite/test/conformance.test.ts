import { PGlite } from '@electric-sql/pglite'
import {
  inspectedBy,
  rowsInspector,
  runBackendConformance,
  runPublishConformance,
  sqlSavepoint,
} from '@outboxkit/conformance'
import {
  inboxHandler,
  type PgliteTransaction,
  pgliteBackend,
  processOnce,
  publish,
  publishMany,
} from '@outboxkit/pglite'

runPublishConformance<PgliteTransaction>({
  name: 'pglite',
  publish,
  publishMany,
  processOnce,
  async setup() {
    const db = await PGlite.create()
    return {
      backend: pgliteBackend(db),
      inboxHandler: (inbox, fn) => inboxHandler(inbox, db, fn),
      transaction: (fn) => db.transaction(fn),
      savepoint: sqlSavepoint((tx, sql) => tx.query(sql)),
      refusedHandles: async () => [
        { label: 'the PGlite instance', handle: db },
        { label: 'undefined', handle: undefined },
        { label: 'a string', handle: 'tx' },
      ],
      ...inspectedBy(rowsInspector(db), () => db.close()),
    }
  },
})

runBackendConformance({
  name: 'pglite',
  async setup() {
    const db = await PGlite.create()
    return {
      backend: () => pgliteBackend(db),
      supportsListen: true,
      ...inspectedBy(rowsInspector(db), () => db.close()),
    }
  },
})
