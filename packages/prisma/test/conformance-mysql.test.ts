import { mysqlInspector, runPublishConformance, testMysqlUri } from '@outboxkit/conformance'
import { mysqlBackend } from '@outboxkit/mysql'
import { type PrismaTransactionClient, publish, publishMany } from '@outboxkit/prisma'
import { PrismaMariaDb } from '@prisma/adapter-mariadb'
import { loadPrismaClient } from './support/prisma-client.js'

// Generated (when missing) while the file is collected, outside any hook timeout.
const { PrismaClient } = await loadPrismaClient('mysql')

runPublishConformance<PrismaTransactionClient>({
  name: 'prisma',
  label: 'prisma (mysql provider, @prisma/adapter-mariadb)',
  publish,
  publishMany,
  async setup() {
    const adapter = new PrismaMariaDb(`${testMysqlUri()}?connectionLimit=25`)
    const prisma = new PrismaClient({ adapter })
    // The backend opens (and closes) its own mysql2 pool.
    const backend = mysqlBackend({ uri: testMysqlUri() })
    const inspector = mysqlInspector()
    return {
      dialect: 'mysql',
      backend,
      inspect: (text, params) => inspector.query(text, params),
      transaction: (fn) => prisma.$transaction(fn, { maxWait: 10_000, timeout: 20_000 }),
      // Prisma 7.5+: a nested $transaction on the tx client is a savepoint.
      savepoint: (tx, fn) => (tx as unknown as TestTx).$transaction(fn),
      async refusedHandles() {
        return [
          { label: 'the root PrismaClient', handle: prisma },
          { label: 'a $extends() PrismaClient', handle: prisma.$extends({ client: { $hello: () => 'hi' } }) },
          { label: 'the PrismaMariaDb adapter', handle: adapter },
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
        await backend.close()
      },
    }
  },
})

interface TestTx {
  $transaction<T>(fn: (tx: PrismaTransactionClient) => Promise<T>): Promise<T>
}
