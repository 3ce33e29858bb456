import { ALL_DIALECTS, assertDialect, type OutboxDialect } from './dialect-sql.js'

/**
 * The backend matrix of the tests, like Kysely's `DIALECTS`: the comma-separated dialects of the
 * `OUTBOXKIT_DIALECTS` environment variable (e.g. `postgres,sqlite`), else all three. An unknown
 * name throws, so a typo cannot silently run nothing.
 */
export const DIALECTS: readonly OutboxDialect[] = parseDialects(process.env.OUTBOXKIT_DIALECTS)

/** Parses an `OUTBOXKIT_DIALECTS` value (exported for tests of the matrix itself). */
export function parseDialects(value: string | undefined): readonly OutboxDialect[] {
  if (value === undefined || value.trim() === '') return ALL_DIALECTS
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
  return [...new Set(names.map(assertDialect))]
}

/**
 * The outbox transport of the relay-semantics tests: `OUTBOXKIT_TRANSPORT=wal` makes every outbox
 * of a {@link RelayFixture} (`h.outbox(...)`) a `transport: 'wal'` one (PostgreSQL only, see
 * `packages/core/test/through-wal.test.ts`); unset or `table`, the default transport. Anything
 * else throws, so a typo cannot silently test the table.
 */
export const TRANSPORT: 'table' | 'wal' = parseTransport(process.env.OUTBOXKIT_TRANSPORT)

/** Parses an `OUTBOXKIT_TRANSPORT` value. */
export function parseTransport(value: string | undefined): 'table' | 'wal' {
  if (value === undefined || value === '' || value === 'table') return 'table'
  if (value === 'wal') return 'wal'
  throw new Error(`OUTBOXKIT_TRANSPORT must be 'table' or 'wal', got ${JSON.stringify(value)}`)
}
