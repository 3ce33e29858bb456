import { PGlite } from '@electric-sql/pglite'
import { runBackendConformance, runPublishConformance } from '@outboxkit/conformance'
import { type PgliteTransaction, pgliteBackend, publish, publishMany } from '@outboxkit/pglite'

runPublishConformance<PgliteTransaction>({
  name: 'pglite',
  publish,
  publishMany,
  async setup() {
    const db = await PGlite.create()
    return {
      backend: pgliteBackend(db),
      inspect: async (text, params) => (await db.query<Record<string, unknown>>(text, params)).rows,
      transaction: (fn) => db.transaction(fn),
      async savepoint(tx, fn) {
        await tx.query('SAVEPOINT sp')
        try {
          const result = await fn(tx)
          await tx.query('RELEASE SAVEPOINT sp')
          return result
        } catch (err) {
          await tx.query('ROLLBACK TO SAVEPOINT sp')
          throw err
        }
      },
      async refusedHandles() {
        return [
          { label: 'the PGlite instance', handle: db },
          { label: 'undefined', handle: undefined },
          { label: 'a string', handle: 'tx' },
        ]
      },
      async teardown() {
        await db.close()
      },
    }
  },
})

runBackendConformance({
  name: 'pglite',
  async setup() {
    const db = await PGlite.create()
    return {
      backend: () => pgliteBackend(db),
      inspect: async (text, params) => (await db.query<Record<string, unknown>>(text, params)).rows,
      supportsListen: true,
      teardown: () => db.close(),
    }
  },
})
