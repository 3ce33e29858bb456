import { describe } from 'vitest'

/**
 * The PgBouncer of the test run: the URL of a PgBouncer in transaction mode (pool size 3, smaller
 * than the tests' concurrency) in front of the tests' PostgreSQL, which the repository's vitest
 * `globalSetup` starts (scripts/ensure-pgbouncer.sh) and puts in `PGBOUNCER_URL`; `undefined`
 * when none could be had (see {@link pgBouncerSkipReason}).
 */
export function pgBouncerUrl(): string | undefined {
  return process.env.PGBOUNCER_URL || undefined
}

/** Why there is no {@link pgBouncerUrl}, as the `globalSetup` said it (`PGBOUNCER_SKIPPED`). */
export function pgBouncerSkipReason(): string {
  return (
    process.env.PGBOUNCER_SKIPPED ??
    'PGBOUNCER_URL is not set (the repository vitest globalSetup starts one with scripts/ensure-pgbouncer.sh)'
  )
}

/**
 * A `describe` whose tests run through the test run's PgBouncer: `body` gets its URL and registers
 * the tests (a conformance suite with a pooled harness, say). Without a PgBouncer the block is
 * skipped, and its title says why; `body` then still runs to collect the tests, with `url` `''`,
 * so it must open connections only in hooks and tests, as the suites do.
 */
export function describeThroughPgBouncer(title: string, body: (url: string) => void): void {
  const url = pgBouncerUrl()
  describe.skipIf(url === undefined)(
    url === undefined
      ? `${title} through PgBouncer (skipped: ${pgBouncerSkipReason()})`
      : `${title} through PgBouncer (transaction mode)`,
    () => body(url ?? ''),
  )
}

/**
 * Why the escaped-handle checks of the publish suite cannot pass for postgres.js (and Drizzle on
 * it) with `prepare: false` through PgBouncer 1.18 in transaction mode. postgres.js keeps no
 * transaction state, so publish pipelines a transaction marker with a guarded INSERT and lets the
 * database decide. A `tx` kept after its transaction ended runs them in autocommit: PgBouncer hands
 * the server connection back to its pool at the marker's ReadyForQuery while the INSERT's
 * Parse/Describe/Flush (postgres.js describes a parameterized statement first when it does not
 * prepare) are already on that server, and drops the replies ("got packet '1' from server when not
 * linked" in its log): the publish hangs instead of throwing NOT_IN_TRANSACTION. In an open
 * transaction the server stays linked, and a direct connection is unaffected.
 */
export const POSTGRES_JS_ESCAPES_THROUGH_PGBOUNCER =
  'postgres.js with prepare: false through PgBouncer 1.18: a tx kept after its transaction ended runs the pipelined marker and INSERT in autocommit, and PgBouncer drops the INSERT describe replies after the marker ends its implicit transaction (the publish hangs; see docs/operations.md, Poolers)'
