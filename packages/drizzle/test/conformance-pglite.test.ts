import { PGlite } from '@electric-sql/pglite'
import { runPublishConformance } from '@outboxkit/conformance'
import { type DrizzleTransaction, publish, publishMany } from '@outboxkit/drizzle'
import { pgliteBackend } from '@outboxkit/pglite'
import { drizzle } from 'drizzle-orm/pglite'

runPublishConformance<DrizzleTransaction>({
  name: 'drizzle',
  label: 'drizzle (PGlite)',
  publish,
  publishMany,
  async setup() {
    const client = await PGlite.create()
    const db = drizzle({ client })
    return {
      backend: pgliteBackend(client),
      inspect: async (text, params) => (await client.query<Record<string, unknown>>(text, params)).rows,
      transaction: (fn) => db.transaction(fn),
      savepoint: (tx, fn) => tx.transaction(fn),
      async refusedHandles() {
        return [
          { label: 'the root db', handle: db },
          { label: 'the PGlite instance', handle: client },
          { label: 'a PGlite transaction', handle: await client.transaction(async (tx) => tx) },
        ]
      },
      async teardown() {
        await client.close()
      },
    }
  },
})
