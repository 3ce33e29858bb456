import { beforeEach, describe, test } from 'vitest'

// The relay-semantics tests (relay delivery, failures and lifecycle) on the WAL transport, for
// through-wal*.test.ts: each of those files sets the environment, then calls runThroughWal.

const NO_LEASE_RACE =
  'a slot message has no lease to lapse while its handler runs: past its deadline it is given up as a failed attempt and moved into the table (packages/pg/test/wal-attempts.test.ts), so the reclaim-while-A-still-runs race these tests set up cannot happen'

/** Tests whose subject only the table has, with the reason; everything else runs as written. */
const NOT_ON_THE_SLOT = new Map<string, string>([
  [
    '500 messages: each delivered exactly once, by disjoint claims',
    'one reader per slot: the second relay stands by and gets nothing from the slot, so the handlers, held until both relays have delivered, would wait forever; two relays on one slot are tested in packages/pg/test/wal-relay.test.ts (one reader per slot, standby takes over)',
  ],
  [
    'a backend-level claim that is never settled is reclaimed after its lease',
    'the message is in the slot, not in the table: a claim on the table finds nothing to lease',
  ],
  ...['success', 'Retry', 'failure'].flatMap((late) =>
    ['keeps', 'deletes'].map(
      (b) => [`A's late ${late} after B reclaimed changes nothing (B ${b} the row)`, NO_LEASE_RACE] as const,
    ),
  ),
  ...[
    'publishMany: one send span for the batch; every message carries its context',
    "the publisher's own traceparent and tracestate are kept, and the consumer span continues that trace",
  ].map(
    (name) =>
      [
        name,
        'it reads the traceparent stored in the message row, and a WAL message has no row (that the consumer span continues the send span is asserted by the other tracing tests here)',
      ] as const,
  ),
  [
    'a handler that finished before the grace ended is not aborted while its settle is still being written',
    'a delivered slot message has no settle statement to hold (nothing is written for it), so the held settle this test waits for never comes',
  ],
])

/** The test files a through-wal file runs, imported once the environment is set. */
const SUITES = {
  relay: async () => {
    await import('../relay-delivery.test.js')
    await import('../relay-failures.test.js')
    await import('../relay-lifecycle.test.js')
  },
  telemetry: async () => {
    await import('../ops-telemetry.test.js')
  },
}

/**
 * Runs a suite on PostgreSQL with every outbox of the harness on `transport: 'wal'`
 * (OUTBOXKIT_TRANSPORT), the relays on `backend`'s backend (OUTBOXKIT_PG_BACKEND): `relay` is
 * relay-delivery, relay-failures and relay-lifecycle; `telemetry` is ops-telemetry. The files are
 * imported after the environment is set, so their harness and matrix read it. Skipped, with the
 * reason, when the server has no logical WAL.
 */
export function runThroughWal(backend: 'pg' | 'postgres-js', suite: keyof typeof SUITES = 'relay'): void {
  const skipped = process.env.OUTBOXKIT_WAL_SKIPPED
  const name = `${suite === 'relay' ? 'relay semantics' : 'telemetry'} on the WAL transport (${backend === 'pg' ? 'pgBackend' : 'postgresJsBackend'})`
  if (skipped !== undefined) {
    describe.skip(`${name} (skipped: ${skipped})`, () => {
      test(suite === 'relay' ? 'relay delivery, failures and lifecycle' : 'tracing and metrics', () => {})
    })
    return
  }
  process.env.OUTBOXKIT_TRANSPORT = 'wal'
  process.env.OUTBOXKIT_DIALECTS = 'postgres'
  process.env.OUTBOXKIT_PG_BACKEND = backend
  describe(name, async () => {
    beforeEach((context) => {
      const why = NOT_ON_THE_SLOT.get(context.task.name)
      if (why) context.skip(`not on the WAL transport: ${why}`)
    })
    await SUITES[suite]()
  })
}
