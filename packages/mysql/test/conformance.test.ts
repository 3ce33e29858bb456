import {
  inMysqlTransaction,
  inspectedBy,
  mysqlInspector,
  type RefusedHandle,
  runBackendConformance,
  runPublishConformance,
  sqlSavepoint,
  testMysqlUri,
} from '@outboxkit/conformance'
import {
  inboxHandler,
  type MysqlTransactionConnection,
  mysqlBackend,
  processOnce,
  publish,
  publishMany,
} from '@outboxkit/mysql'
import mysql from 'mysql2/promise'

runPublishConformance<MysqlTransactionConnection>({
  name: 'mysql',
  publish,
  publishMany,
  processOnce,
  async setup() {
    const pool = mysql.createPool({ uri: testMysqlUri(), connectionLimit: 25 })
    const checkedOut: mysql.PoolConnection[] = []
    const plain: mysql.Connection[] = []
    return {
      dialect: 'mysql',
      backend: mysqlBackend({ pool }),
      inboxHandler: (inbox, fn) => inboxHandler(inbox, pool, fn),
      transaction: (fn) => inMysqlTransaction(pool, fn),
      savepoint: sqlSavepoint((conn, sql) => conn.query(sql)),
      async refusedHandles(): Promise<RefusedHandle[]> {
        const autocommit = await pool.getConnection()
        checkedOut.push(autocommit)
        const released = await pool.getConnection()
        await released.beginTransaction()
        released.release()
        const ended = await mysql.createConnection(testMysqlUri())
        await ended.beginTransaction()
        await ended.end()
        const standalone = await mysql.createConnection(testMysqlUri())
        plain.push(standalone)
        return [
          { label: 'a mysql2/promise Pool', handle: pool },
          { label: 'a callback-style mysql2 Pool', handle: pool.pool },
          { label: 'a pooled connection in autocommit', handle: autocommit },
          { label: 'a connection in autocommit', handle: standalone },
          { label: 'a pooled connection released inside its transaction', handle: released },
          { label: 'an ended connection', handle: ended },
          { label: 'null', handle: null },
          { label: 'a plain object', handle: { query: () => {} } },
        ]
      },
      ...inspectedBy(mysqlInspector(), async () => {
        for (const c of checkedOut) c.release()
        for (const c of plain) await c.end()
        await pool.end()
      }),
    }
  },
})

runBackendConformance({
  name: 'mysql',
  setup: async () => ({
    dialect: 'mysql',
    backend: () => mysqlBackend({ uri: testMysqlUri(), commandTimeoutMs: 10_000 }),
    supportsListen: false,
    ...inspectedBy(mysqlInspector()),
  }),
})
