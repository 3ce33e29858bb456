import {
  inspectedBy,
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
    const reserved: postgres.ReservedSql[] = []
    return {
      backend: postgresJsBackend(sql),
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
      ...inspectedBy(serverInspector(), async () => {
        for (const r of reserved) {
          await r`ROLLBACK`.catch(() => {})
          r.release()
        }
        await sql.end()
      }),
    }
  },
})

// On the user's sql, every instance shares it: close() must leave it open for the next one. Owned:
// each instance opens its own from the URL.
for (const [name, owned] of [
  ['postgres-js', false],
  ['postgres-js owned', true],
] as const) {
  runBackendConformance({
    name,
    async setup() {
      const sql = owned ? undefined : postgres(testDatabaseUrl(), { max: 10, onnotice: () => {} })
      return {
        backend: () =>
          sql
            ? postgresJsBackend(sql, { commandTimeoutMs: 10_000 })
            : postgresJsBackend({ url: testDatabaseUrl(), commandTimeoutMs: 10_000 }),
        supportsListen: true,
        ...inspectedBy(serverInspector(), () => sql?.end()),
      }
    },
  })
}
