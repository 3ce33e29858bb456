import {
  runBackendConformance,
  runPublishConformance,
  serverInspector,
  testDatabaseUrl,
} from '@outboxkit/conformance'
import { type PostgresJsTransaction, postgresJsBackend, publish, publishMany } from '@outboxkit/postgres-js'
import postgres from 'postgres'

runPublishConformance<PostgresJsTransaction>({
  name: 'postgres-js',
  publish,
  publishMany,
  async setup() {
    const sql = postgres(testDatabaseUrl(), { max: 25, onnotice: () => {} })
    const inspector = serverInspector()
    const reserved: postgres.ReservedSql[] = []
    return {
      backend: postgresJsBackend(sql),
      inspect: (text, params) => inspector.query(text, params),
      transaction: <T>(fn: (tx: PostgresJsTransaction) => Promise<T>) => sql.begin(fn) as Promise<T>,
      savepoint: <T>(tx: PostgresJsTransaction, fn: (tx: PostgresJsTransaction) => Promise<T>) =>
        tx.savepoint(fn) as Promise<T>,
      async refusedHandles() {
        const idle = await sql.reserve()
        const inBegin = await sql.reserve()
        reserved.push(idle, inBegin)
        await inBegin`BEGIN`
        return [
          { label: 'the root sql', handle: sql },
          { label: 'a reserved connection (sql.reserve())', handle: idle },
          { label: 'a reserved connection inside a manual BEGIN', handle: inBegin },
          { label: 'null', handle: null },
          { label: 'a plain object', handle: { unsafe: () => {} } },
          { label: 'a function', handle: () => {} },
        ]
      },
      async teardown() {
        for (const r of reserved) {
          await r`ROLLBACK`.catch(() => {})
          r.release()
        }
        await inspector.close()
        await sql.end()
      },
    }
  },
})

runBackendConformance({
  name: 'postgres-js',
  async setup() {
    const inspector = serverInspector()
    const sql = postgres(testDatabaseUrl(), { max: 10, onnotice: () => {} })
    return {
      // Every instance shares the user's sql: close() must leave it open for the next one.
      backend: () => postgresJsBackend(sql, { commandTimeoutMs: 10_000 }),
      inspect: (text, params) => inspector.query(text, params),
      supportsListen: true,
      async teardown() {
        await inspector.close()
        await sql.end()
      },
    }
  },
})

runBackendConformance({
  name: 'postgres-js owned',
  async setup() {
    const inspector = serverInspector()
    return {
      backend: () => postgresJsBackend({ url: testDatabaseUrl(), commandTimeoutMs: 10_000 }),
      inspect: (text, params) => inspector.query(text, params),
      supportsListen: true,
      teardown: () => inspector.close(),
    }
  },
})
