// The relay-semantics tests (relay delivery, failures, lifecycle, the lease heartbeat and the admin
// API) run again on PostgreSQL through PgBouncer in transaction mode (pool size 3, smaller than
// their concurrency), with no option set: the harness's pool and publishes, every backend and
// relay, and the raw SQL go through PGBOUNCER_URL. LISTEN cannot work there, so the relays find
// that out with their probe and deliver by polling. The files are imported after DATABASE_URL and
// OUTBOXKIT_DIALECTS are set, so their harness and matrix read them.
import { beforeEach, describe, test } from 'vitest'

/** Tests that observe server sessions, which PgBouncer keeps open and shares by design. */
const SESSION_TESTS = new Map([
  [
    'a connection-string backend closes its own connections (pool and LISTEN) on stop',
    'it counts server sessions by application_name, and PgBouncer keeps its server connections open',
  ],
])

const url = process.env.PGBOUNCER_URL
if (url) {
  process.env.DATABASE_URL = url
  process.env.OUTBOXKIT_DIALECTS = 'postgres'
  describe('relay semantics through PgBouncer (transaction mode)', async () => {
    beforeEach((context) => {
      const why = SESSION_TESTS.get(context.task.name)
      if (why) context.skip(`not through a pooler: ${why}`)
    })
    await import('./relay-delivery.test.js')
    await import('./relay-failures.test.js')
    await import('./relay-lifecycle.test.js')
    await import('./heartbeat-lease.test.js')
    await import('./admin-api-dead-letters.test.js')
    await import('./admin.test.js')
  })
} else {
  describe.skip(`relay semantics through PgBouncer (skipped: ${process.env.PGBOUNCER_SKIPPED ?? 'PGBOUNCER_URL is not set'})`, () => {
    test('relay delivery, failures, lifecycle, lease heartbeat and admin', () => {})
  })
}
