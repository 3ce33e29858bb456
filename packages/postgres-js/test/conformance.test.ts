import {
  describeThroughPgBouncer,
  inspectedBy,
  POSTGRES_JS_ESCAPES_THROUGH_PGBOUNCER,
  runBackendConformance,
  runPublishConformance,
  serverInspector,
  testDatabaseUrl,
} from '@outboxkit/conformance'
import {
  inboxHandler,
  type PostgresJsTransaction,
  postgresJsBackend,
  processOnce,
  publish,
  publishMany,
} from '@outboxkit/postgres-js'
import postgres from 'postgres'

const ESCAPES = {
  afterCommit: POSTGRES_JS_ESCAPES_THROUGH_PGBOUNCER,
  afterRollback: POSTGRES_JS_ESCAPES_THROUGH_PGBOUNCER,
}

/** The publish suite on a `sql` to `url` (the server; or PgBouncer, with `prepare: false` as postgres.js requires there). */
function runPostgresJsPublishConformance(url: () => string, through?: 'pgbouncer'): void {
  runPublishConformance<PostgresJsTransaction>({
    name: 'postgres-js',
    ...(through ? { label: 'postgres-js through PgBouncer (prepare: false)' } : {}),
    publish,
    publishMany,
    processOnce,
    async setup() {
      const sql = postgres(url(), { max: 25, onnotice: () => {}, ...(through ? { prepare: false } : {}) })
      const reserved: postgres.ReservedSql[] = []
      return {
        ...(through ? { undetectableEscapes: ESCAPES } : {}),
        backend: postgresJsBackend(sql),
        inboxHandler: (inbox, fn) => inboxHandler(inbox, sql, fn),
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
}

runPostgresJsPublishConformance(testDatabaseUrl)

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

// The same suites through PgBouncer in transaction mode: publish on a `sql` with `prepare: false`
// (postgres.js' own requirement there); the backend on such a `sql` and on its own `{ url }` (which
// does not prepare unless told to), LISTEN on a direct `sql` (the `listen` option).
describeThroughPgBouncer('postgres-js', (pooled) => {
  runPostgresJsPublishConformance(() => pooled, 'pgbouncer')
  for (const [name, owned] of [
    ['postgres-js_pgbouncer', false],
    ['postgres-js_pgbouncer_owned', true],
  ] as const) {
    runBackendConformance({
      name,
      async setup() {
        const direct = postgres(testDatabaseUrl(), { max: 2, onnotice: () => {} })
        const sql = owned ? undefined : postgres(pooled, { max: 10, prepare: false, onnotice: () => {} })
        return {
          backend: () =>
            sql
              ? postgresJsBackend(sql, { commandTimeoutMs: 10_000, listen: direct })
              : postgresJsBackend({ url: pooled, commandTimeoutMs: 10_000, listen: direct }),
          supportsListen: true,
          ...inspectedBy(serverInspector(), () => Promise.all([sql?.end(), direct.end()])),
        }
      },
    })
  }
})
