import { type Inspector, thrown, uniqueTableName } from '@outboxkit/conformance'
import { isOutboxError, type PublishMessage } from '@outboxkit/core'
import { afterAll, beforeAll, expect } from 'vitest'

/**
 * The two names every dialect's drizzle-kit test creates, with the label of each test: the default
 * name, and one of 63 characters (`longLabel` says how the dialect clips the names derived from it).
 */
export function kitTableNames(longLabel: string): (readonly [label: string, name: string])[] {
  return [
    ['the default name', 'outbox'],
    [longLabel, `outbox_${'x'.repeat(56)}`],
  ]
}

/** The message the typed-columns tests publish: every optional field but the dedupKey, delayed 1 s. */
export const TYPED_MESSAGE = {
  topic: 'typed',
  payload: { n: 1 },
  key: 'k',
  headers: { h: 'v' },
  delayMs: 1000,
} satisfies PublishMessage<any>

/** A row of {@link TYPED_MESSAGE} as Drizzle's typed columns return it (dates are checked per dialect). */
export function expectTypedRow(row: Record<string, any> | undefined, id: string): void {
  expect(row).toMatchObject({ id, topic: 'typed', key: 'k', payload: { n: 1 }, headers: { h: 'v' } })
  expect(row!.state).toBe('pending')
  expect(row!.attempts).toBe(0)
  expect(row!.availableAt).toBeInstanceOf(Date)
  expect(row!.dedupKey).toBeNull()
  expect(row!.seq).toBeNull() // only messages of ordered topics are numbered
}

/** Every table helper in `helpers` refuses every name in `names` with INVALID_CONFIG. */
export function expectNamesRefused(helpers: ((name: never) => unknown)[], names: unknown[]): void {
  for (const bad of names) {
    for (const helper of helpers) {
      const err = thrown(() => helper(bad as never))
      expect(isOutboxError(err, 'INVALID_CONFIG'), `${String(bad)}: ${String(err)}`).toBe(true)
    }
  }
}

/**
 * Two namespaces of the file's own (PostgreSQL schemas, or MySQL databases): `migrate` creates a
 * table in `viaMigrate`, drizzle-kit's SQL the same table in `viaKit`. Created before all tests;
 * dropped after all, then `inspector` is closed and `close` (the rest the file opened) runs.
 */
export function useMigrateAndKitNamespaces(
  inspector: Inspector,
  kind: 'SCHEMA' | 'DATABASE',
  close: () => unknown,
): { viaMigrate: string; viaKit: string } {
  const prefix = kind === 'SCHEMA' ? 'drizzle_kit_' : 'drizzle_kit_m'
  const names = { viaMigrate: uniqueTableName(`${prefix}m`), viaKit: uniqueTableName(`${prefix}k`) }
  const both = Object.values(names)
  beforeAll(async () => {
    for (const name of both) await inspector.query(`CREATE ${kind} ${name}`)
  })
  afterAll(async () => {
    const cascade = kind === 'SCHEMA' ? ' CASCADE' : ''
    for (const name of both) await inspector.query(`DROP ${kind} IF EXISTS ${name}${cascade}`)
    await inspector.close()
    await close()
  })
  return names
}
