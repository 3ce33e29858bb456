import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sqliteInspector } from '@outboxkit/conformance'
import { sqliteBackend } from '@outboxkit/sqlite'
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3'
import Database from 'better-sqlite3'
import { runPrismaConformance } from './support/conformance.js'
import { loadPrismaClient } from './support/prisma-client.js'

// Generated (when missing) while the file is collected, outside any hook timeout.
const { PrismaClient } = await loadPrismaClient('sqlite')

runPrismaConformance('prisma (sqlite provider, @prisma/adapter-better-sqlite3)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'outboxkit-prisma-sqlite-'))
  const file = join(dir, 'test.db')
  const other = new Database(file)
  // Prisma's adapter opens its own better-sqlite3 connection; the relay and the inspector theirs.
  // The adapter runs one transaction at a time (a better-sqlite3 connection has one): callers queue.
  return {
    prisma: new PrismaClient({ adapter: new PrismaBetterSqlite3({ url: `file:${file}` }) }),
    dialect: 'sqlite',
    backend: sqliteBackend({ filename: file }),
    inspector: sqliteInspector(file),
    maxWait: 20_000,
    otherHandles: [
      { label: 'a better-sqlite3 Database', handle: other },
      { label: 'undefined', handle: undefined },
    ],
    cleanup() {
      other.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
})
