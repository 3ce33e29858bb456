import { describeThroughPgBouncer, serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import { pgBackend } from '@outboxkit/pg'
import { PrismaPg } from '@prisma/adapter-pg'
import pg from 'pg'
import { runPrismaConformance } from './support/conformance.js'
import { loadPrismaClient } from './support/prisma-client.js'

// Generated (when missing) while the file is collected, outside any hook timeout.
const { PrismaClient } = await loadPrismaClient()

const open = (url: string) => async () => {
  const relayPool = new pg.Pool({ connectionString: url, max: 5 })
  return {
    prisma: new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 25 }) }),
    backend: pgBackend({ pool: relayPool }),
    inspector: serverInspector(),
    otherHandles: [
      { label: 'a pg Pool', handle: relayPool },
      { label: 'null', handle: null },
    ],
    cleanup: () => relayPool.end(),
  }
}
runPrismaConformance(undefined, open(testDatabaseUrl()))

// The same, Prisma's pg adapter and the relay's pool through PgBouncer in transaction mode.
describeThroughPgBouncer('prisma', (pooled) => {
  runPrismaConformance('prisma through PgBouncer', open(pooled))
})
