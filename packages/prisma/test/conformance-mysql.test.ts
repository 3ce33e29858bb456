import { mysqlInspector, testMysqlUri } from '@outboxkit/conformance'
import { mysqlBackend } from '@outboxkit/mysql'
import { PrismaMariaDb } from '@prisma/adapter-mariadb'
import { runPrismaConformance } from './support/conformance.js'
import { loadPrismaClient } from './support/prisma-client.js'

// Generated (when missing) while the file is collected, outside any hook timeout.
const { PrismaClient } = await loadPrismaClient('mysql')

runPrismaConformance('prisma (mysql provider, @prisma/adapter-mariadb)', async () => {
  const adapter = new PrismaMariaDb(`${testMysqlUri()}?connectionLimit=25`)
  // The backend opens (and closes) its own mysql2 pool.
  return {
    prisma: new PrismaClient({ adapter }),
    dialect: 'mysql',
    backend: mysqlBackend({ uri: testMysqlUri() }),
    inspector: mysqlInspector(),
    otherHandles: [
      { label: 'the PrismaMariaDb adapter', handle: adapter },
      { label: 'null', handle: null },
    ],
  }
})
