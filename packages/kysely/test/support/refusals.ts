import { settle } from '@outboxkit/conformance'
import type { Outbox } from '@outboxkit/core'
import { publish, publishMany } from '@outboxkit/kysely'
import type { Kysely } from 'kysely'
import { expect } from 'vitest'

/** How every refusal of the Kysely adapter starts. */
export const REFUSAL_PREFIX = /^\[outboxkit\] \[kysely\] publish needs an open transaction, got /

/**
 * Plugins on the transaction (`withPlugins` is a db with e.g. CamelCasePlugin) do not change what
 * publish reads or writes: the dedupKey still finds the first message, and the payload keeps its
 * keys (`payloadOf` reads it back by id).
 */
export async function expectPluginsIgnored(
  withPlugins: Kysely<any>,
  outbox: Outbox,
  { dedupKey, payloadOf }: { dedupKey: string; payloadOf: (id: string) => unknown },
): Promise<void> {
  const first = await withPlugins
    .transaction()
    .execute((trx) => publish(outbox, trx, { topic: 'plugins', payload: { someField: 1 }, dedupKey }))
  // Without withoutPlugins(), CamelCasePlugin would rename dedup_key and the existing id would be lost.
  const second = await withPlugins
    .transaction()
    .execute((trx) => publishMany(outbox, trx, [{ topic: 'plugins', payload: 2, dedupKey }]))
  expect(first.published).toBe(true)
  expect(second).toEqual([{ id: first.id, published: false }])
  expect(await payloadOf(first.id)).toEqual({ someField: 1 })
}

/**
 * A ControlledTransaction whose commit() runs while publish is on its way: the publish is refused
 * (`expectRefused`) and nothing is written on its topic (`count`).
 */
export async function expectRacingCommitRefused(
  db: Kysely<any>,
  outbox: Outbox,
  { expectRefused, count }: { expectRefused: (err: unknown) => void; count: (topic: string) => unknown },
): Promise<void> {
  const trx = await db.startTransaction().execute()
  const pending = settle(publish(outbox, trx, { topic: 'racing-commit', payload: 1 }))
  await trx.commit().execute()
  expectRefused(await pending)
  expect(await count('racing-commit')).toBe(0)
}
