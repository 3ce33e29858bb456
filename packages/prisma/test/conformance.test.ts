import { runPublishConformance, serverInspector, testDatabaseUrl } from '@outboxkit/conformance'
import { pgBackend } from '@outboxkit/pg'
import { type PrismaTransactionClient, publish, publishMany } from '@outboxkit/prisma'
import { PrismaPg } from '@prisma/adapter-pg'
import pg from 'pg'
import { loadPrismaClient } from './support/prisma-client.js'

// Generated (when missing) while the file is collected, outside any hook timeout.
const { PrismaClient } = await loadPrismaClient()

runPublishConformance<PrismaTransactionClient>({
  name: 'prisma',
  publish,
  publishMany,
  async setup() {
    const prisma = new PrismaClient({
      adapter: new PrismaPg({ connectionString: testDatabaseUrl(), max: 25 }),
    })
    const relayPool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 5 })
    const inspector = serverInspector()
    return {
      backend: pgBackend({ pool: relayPool }),
      inspect: (text, params) => inspector.query(text, params),
      transaction: (fn) => prisma.$transaction(fn, { maxWait: 10_000, timeout: 20_000 }),
      // Prisma 7.5+: a nested $transaction on the tx client is a savepoint.
      savepoint: (tx, fn) => (tx as unknown as TestTx).$transaction(fn),
      async refusedHandles() {
        return [
          { label: 'the root PrismaClient', handle: prisma },
          { label: 'a $extends() PrismaClient', handle: prisma.$extends({ client: { $hello: () => 'hi' } }) },
          { label: 'a pg Pool', handle: relayPool },
          { label: 'null', handle: null },
          {
            label: 'a plain object with $queryRawUnsafe',
            handle: { $queryRawUnsafe: () => Promise.resolve([]) },
          },
        ]
      },
      async teardown() {
        await prisma.$disconnect()
        await inspector.close()
        await relayPool.end()
      },
    }
  },
})

interface TestTx {
  $transaction<T>(fn: (tx: PrismaTransactionClient) => Promise<T>): Promise<T>
}
