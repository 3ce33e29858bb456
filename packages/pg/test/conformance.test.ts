import {
  describeThroughPgBouncer,
  inPgTransaction,
  inspectedBy,
  runBackendConformance,
  runPublishConformance,
  serverInspector,
  sqlSavepoint,
  testDatabaseUrl,
} from '@outboxkit/conformance'
import {
  inboxHandler,
  type PgTransactionClient,
  pgBackend,
  processOnce,
  publish,
  publishMany,
} from '@outboxkit/pg'
import pg from 'pg'

/** The publish suite on a pg pool to `url` (the server, or PgBouncer in front of it). */
function runPgPublishConformance(url: () => string, label?: string): void {
  runPublishConformance<PgTransactionClient>({
    name: 'pg',
    ...(label ? { label } : {}),
    publish,
    publishMany,
    processOnce,
    async setup() {
      const pool = new pg.Pool({ connectionString: url(), max: 25 })
      const autocommit = await pool.connect()
      const unconnected = new pg.Client({ connectionString: url() })
      const checkedOut: pg.PoolClient[] = [autocommit]
      return {
        backend: pgBackend({ pool }),
        inboxHandler: (inbox, fn) => inboxHandler(inbox, pool, fn),
        transaction: (fn) => inPgTransaction(pool, fn),
        savepoint: sqlSavepoint((client, sql) => client.query(sql)),
        async refusedHandles() {
          const aborted = await pool.connect()
          checkedOut.push(aborted)
          await aborted.query('BEGIN')
          await aborted.query('SELECT 1/0').catch(() => {})
          return [
            { label: 'a pg Pool', handle: pool },
            { label: 'a pooled client in autocommit', handle: autocommit },
            { label: 'a client that was never connected', handle: unconnected },
            { label: 'a client in a failed transaction', handle: aborted },
            { label: 'null', handle: null },
            { label: 'a plain object', handle: { query: () => {} } },
          ]
        },
        ...inspectedBy(serverInspector(), async () => {
          for (const c of checkedOut) {
            await c.query('ROLLBACK').catch(() => {})
            c.release()
          }
          await pool.end()
        }),
      }
    },
  })
}

runPgPublishConformance(testDatabaseUrl)

runBackendConformance({
  name: 'pg',
  setup: async () => ({
    backend: () => pgBackend({ connectionString: testDatabaseUrl(), commandTimeoutMs: 10_000 }),
    supportsListen: true,
    ...inspectedBy(serverInspector()),
  }),
})

// The same suites with the pool through PgBouncer in transaction mode, no option set; the backend's
// LISTEN on a direct connection (listenConnectionString), so its listen test holds too.
describeThroughPgBouncer('pg', (pooled) => {
  runPgPublishConformance(() => pooled, 'pg through PgBouncer')
  runBackendConformance({
    name: 'pg_pgbouncer',
    setup: async () => ({
      backend: () =>
        pgBackend({
          connectionString: pooled,
          commandTimeoutMs: 10_000,
          listenConnectionString: testDatabaseUrl(),
        }),
      supportsListen: true,
      ...inspectedBy(serverInspector()),
    }),
  })
})
