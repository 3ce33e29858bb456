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
