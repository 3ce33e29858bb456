import { PGlite } from '@electric-sql/pglite'
import { runPublishConformance } from '@outboxkit/conformance'
import { type KyselyTransaction, publish, publishMany } from '@outboxkit/kysely'
import { pgliteBackend } from '@outboxkit/pglite'
import { Kysely } from 'kysely'
import { PgliteDialect } from './pglite-dialect.js'

// The same adapter on another PostgreSQL dialect: Kysely on PGlite.
runPublishConformance<KyselyTransaction>({
  name: 'kysely',
  label: 'kysely (PGlite dialect)',
  publish,
  publishMany,
  async setup() {
    const pglite = await PGlite.create()
    const db = new Kysely<any>({ dialect: new PgliteDialect(pglite) })
    return {
      backend: pgliteBackend(pglite),
      inspect: async (text, params) => (await pglite.query<Record<string, unknown>>(text, params)).rows,
      transaction: (fn) => db.transaction().execute(fn),
      async refusedHandles() {
        return [
          { label: 'the root Kysely instance', handle: db },
          { label: 'the PGlite instance', handle: pglite },
        ]
      },
      async teardown() {
        await db.destroy()
        await pglite.close()
      },
    }
  },
})
