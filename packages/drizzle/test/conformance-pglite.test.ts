import { PGlite } from '@electric-sql/pglite'
import { rowsInspector } from '@outboxkit/conformance'
import type { DrizzleTransaction } from '@outboxkit/drizzle'
import { pgliteBackend } from '@outboxkit/pglite'
import { drizzle } from 'drizzle-orm/pglite'
import { runDrizzleConformance } from './support/conformance.js'

runDrizzleConformance<DrizzleTransaction>('drizzle (PGlite)', async () => {
  const client = await PGlite.create()
  const db = drizzle({ client })
  return {
    db,
    backend: pgliteBackend(client),
    inspector: rowsInspector(client),
    refusedHandles: async () => [
      { label: 'the root db', handle: db },
      { label: 'the PGlite instance', handle: client },
      { label: 'a PGlite transaction', handle: await client.transaction(async (tx) => tx) },
    ],
    close: () => client.close(),
  }
})
