import { mysqlInspector, testMysqlUri } from '@outboxkit/conformance'
import { type DrizzleMysqlTransaction, processOnce, publish, publishMany } from '@outboxkit/drizzle'
import { mysqlBackend } from '@outboxkit/mysql'
import { drizzle } from 'drizzle-orm/mysql2'
import mysql from 'mysql2/promise'
import { createDrizzlePublisher } from '../src/publish.js'
import { runDrizzleConformance } from './support/conformance.js'

// MariaDB here: `publish` takes the guard path ('auto'); the probe path (what MySQL gets) runs
// the suite again below, on the same server.
for (const [label, publisher] of [
  ['drizzle (mysql2)', { publish, publishMany, processOnce }],
  ['drizzle (mysql2, the probe of MySQL)', createDrizzlePublisher('probe')],
] as const) {
  runDrizzleConformance<DrizzleMysqlTransaction>(
    label,
    async () => {
      const pool = mysql.createPool({ uri: testMysqlUri(), connectionLimit: 25, charset: 'utf8mb4' })
      const db = drizzle({ client: pool })
      // A db on one connection of its own, left in autocommit, and a connection inside a BEGIN.
      const single = await mysql.createConnection({ uri: testMysqlUri(), charset: 'utf8mb4' })
      const begun = await pool.getConnection()
      return {
        db,
        dialect: 'mysql',
        backend: mysqlBackend({ pool }),
        inspector: mysqlInspector(),
        async refusedHandles() {
          await begun.beginTransaction()
          return [
            { label: 'the root db on a Pool', handle: db },
            { label: 'the root db on a single connection', handle: drizzle({ client: single }) },
            { label: 'the mysql2 Pool', handle: pool },
            { label: 'a mysql2 connection inside BEGIN (not Drizzle)', handle: begun },
            { label: 'null', handle: null },
            { label: 'a plain object', handle: { execute: () => {} } },
          ]
        },
        async close() {
          await begun.rollback()
          begun.release()
          await single.end()
          await pool.end()
        },
      }
    },
    publisher,
  )
}
