import type { Publisher } from '@outboxkit/conformance'
import type { Outbox } from '@outboxkit/core'

/** How every refusal of the Drizzle adapter starts. */
export const REFUSAL_PREFIX = /^\[outboxkit\] \[drizzle\] publish needs an open Drizzle transaction, got /

/** A Drizzle db or transaction: `transaction(fn)` runs `fn` in a transaction (a savepoint on a tx). */
interface Transactional<TTx> {
  transaction<T>(fn: (tx: TTx) => Promise<T>): Promise<T>
}

/**
 * The documented hazard of a kept tx: on a db whose only connection went back to its pool, a tx
 * kept after its transaction A ended is used inside a later transaction B, which then rolls back.
 * `publishOn` publishes on the kept tx; what it wrote is for the caller to check.
 */
export async function publishOnKeptTxInsideAnother<TTx>(
  db: Transactional<TTx>,
  publishOn: (kept: TTx) => Promise<unknown>,
): Promise<void> {
  let escaped: TTx | undefined
  await db.transaction(async (tx) => {
    escaped = tx
  })
  await db
    .transaction(async () => {
      await publishOn(escaped!)
      throw new Error('B rolls back')
    })
    .catch(() => {})
}

/**
 * Publishes one message per level on `topic`: in the transaction, in a savepoint, and in a
 * savepoint of that savepoint which rolls back. Returns the ids, outer first: the first two are
 * the ones that must be kept.
 */
export async function publishTwoSavepointsDeep<TTx extends Transactional<TTx> & { rollback(): never }>(
  db: Transactional<TTx>,
  publisher: Pick<Publisher, 'publish'>,
  outbox: Outbox,
  topic: string,
): Promise<[string, string, string]> {
  return db.transaction(async (tx) => {
    const outer = await publisher.publish(outbox, tx, { topic, payload: 0 })
    let deep = ''
    const mid = await tx.transaction(async (sp1) => {
      const m = await publisher.publish(outbox, sp1, { topic, payload: 1 })
      await sp1
        .transaction(async (sp2) => {
          deep = (await publisher.publish(outbox, sp2, { topic, payload: 2 })).id
          sp2.rollback()
        })
        .catch(() => {})
      return m
    })
    return [outer.id, mid.id, deep]
  })
}
