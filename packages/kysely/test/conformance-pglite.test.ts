import { PGlite } from '@electric-sql/pglite'
import { pgliteBackend } from '@outboxkit/pglite'
import { Kysely } from 'kysely'
import { PgliteDialect } from './pglite-dialect.js'
import { runKyselyConformance } from './support/conformance.js'

// The same adapter on another PostgreSQL dialect: Kysely on PGlite.
runKyselyConformance('PGlite dialect', ['Transaction'], async () => {
  const pglite = await PGlite.create()
  const db = new Kysely<any>({ dialect: new PgliteDialect(pglite) })
  return {
    db,
    backend: pgliteBackend(pglite),
    inspect: async (text, params) => (await pglite.query<Record<string, unknown>>(text, params)).rows,
    refusedHandles: async () => [
      { label: 'the root Kysely instance', handle: db },
      { label: 'the PGlite instance', handle: pglite },
    ],
    async teardown() {
      await db.destroy()
      await pglite.close()
    },
  }
})
