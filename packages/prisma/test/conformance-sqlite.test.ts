import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runPublishConformance, sqliteInspector } from '@outboxkit/conformance'
import { type PrismaTransactionClient, publish, publishMany } from '@outboxkit/prisma'
import { sqliteBackend } from '@outboxkit/sqlite'
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3'
import Database from 'better-sqlite3'
import { loadPrismaClient } from './support/prisma-client.js'

// Generated (when missing) while the file is collected, outside any hook timeout.
const { PrismaClient } = await loadPrismaClient('sqlite')

runPublishConformance<PrismaTransactionClient>({
  name: 'prisma',
  label: 'prisma (sqlite provider, @prisma/adapter-better-sqlite3)',
  publish,
  publishMany,
  async setup() {
    const dir = mkdtempSync(join(tmpdir(), 'outboxkit-prisma-sqlite-'))
    const file = join(dir, 'test.db')
    // Prisma's adapter opens its own better-sqlite3 connection; the relay and the inspector theirs.
    const prisma = new PrismaClient({ adapter: new PrismaBetterSqlite3({ url: `file:${file}` }) })
    const backend = sqliteBackend({ filename: file })
    const inspector = sqliteInspector(file)
    const other = new Database(file)
    return {
      dialect: 'sqlite',
      backend,
      inspect: (text, params) => inspector.query(text, params),
      // The adapter runs one transaction at a time (a better-sqlite3 connection has one): callers queue.
      transaction: (fn) => prisma.$transaction(fn, { maxWait: 20_000, timeout: 20_000 }),
      savepoint: (tx, fn) => (tx as unknown as TestTx).$transaction(fn),
      async refusedHandles() {
        return [
          { label: 'the root PrismaClient', handle: prisma },
          { label: 'a $extends() PrismaClient', handle: prisma.$extends({ client: { $hello: () => 'hi' } }) },
          { label: 'a better-sqlite3 Database', handle: other },
          { label: 'undefined', handle: undefined },
          {
            label: 'a plain object with $queryRawUnsafe',
            handle: { $queryRawUnsafe: () => Promise.resolve([]) },
          },
        ]
      },
      async teardown() {
        await prisma.$disconnect()
        await backend.close()
        await inspector.close()
        other.close()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  },
})

interface TestTx {
  $transaction<T>(fn: (tx: PrismaTransactionClient) => Promise<T>): Promise<T>
}
