import {
  commitOrRollback,
  type PublishContext,
  type RefusedHandle,
  runPublishConformance,
} from '@outboxkit/conformance'
import { inboxHandler, type KyselyTransaction, processOnce, publish, publishMany } from '@outboxkit/kysely'
import type { ControlledTransaction, Kysely } from 'kysely'

/**
 * Kysely's two transaction styles: the callback `db.transaction().execute(fn)` (no savepoints),
 * and the controlled `db.startTransaction().execute()` with `commit()` / `rollback()` and savepoints.
 */
export type KyselyStyle = 'Transaction' | 'ControlledTransaction'

/** What a dialect's file opens for one run: its Kysely instance and the suite's context but the transactions. */
export interface KyselyDatabase extends Omit<PublishContext<KyselyTransaction>, 'transaction' | 'savepoint'> {
  db: Kysely<any>
}

/** The transactions and savepoints of `style` on `db`, as the suite drives them. */
export function transactionsOf(
  db: Kysely<any>,
  style: KyselyStyle,
): Pick<PublishContext<KyselyTransaction>, 'transaction' | 'savepoint'> {
  if (style === 'Transaction') return { transaction: (fn) => db.transaction().execute(fn) }
  return {
    async transaction(fn) {
      const trx = await db.startTransaction().execute()
      return commitOrRollback(
        {
          commit: () => trx.commit().execute(),
          rollback: () => !trx.isCommitted && !trx.isRolledBack && trx.rollback().execute(),
        },
        () => fn(trx),
      )
    },
    async savepoint(tx, fn) {
      const sp = await (tx as ControlledTransaction<any>).savepoint('sp').execute()
      return commitOrRollback(
        {
          commit: () => sp.releaseSavepoint('sp').execute(),
          rollback: () => sp.rollbackToSavepoint('sp').execute(),
        },
        () => fn(sp),
      )
    },
  }
}

/**
 * Runs the publish conformance suite on Kysely once per style in `styles`, on what `open(style)`
 * opens. `dialect` names the runs: `kysely (<dialect>, <style>)`, `kysely (<dialect>)` when it
 * has one style only, `kysely (<style>)` without a dialect.
 */
export function runKyselyConformance(
  dialect: string | undefined,
  styles: KyselyStyle[],
  open: (style: KyselyStyle) => Promise<KyselyDatabase>,
): void {
  for (const style of styles) {
    runPublishConformance<KyselyTransaction>({
      name: 'kysely',
      label: `kysely (${[dialect, dialect && styles.length === 1 ? undefined : style].filter(Boolean).join(', ')})`,
      publish,
      publishMany,
      processOnce,
      async setup() {
        const { db, ...context } = await open(style)
        return {
          ...context,
          ...transactionsOf(db, style),
          inboxHandler: (inbox, fn) => inboxHandler(inbox, db, fn as never),
        }
      },
    })
  }
}

/** A `db.connection()` handle held open (its callback waits) until `release()`. */
export function heldConnection(db: Kysely<any>): { connection: Promise<Kysely<any>>; release(): void } {
  let release: () => void = () => {}
  const connection = new Promise<Kysely<any>>((resolve) => {
    void db.connection().execute(
      (conn) =>
        new Promise<void>((done) => {
          release = done
          resolve(conn)
        }),
    )
  })
  return { connection, release: () => release() }
}

/** Two ControlledTransactions that ended: one committed, one rolled back. */
export async function endedControlledTransactions(db: Kysely<any>): Promise<RefusedHandle[]> {
  const committed = await db.startTransaction().execute()
  await committed.commit().execute()
  const rolledBack = await db.startTransaction().execute()
  await rolledBack.rollback().execute()
  return [
    { label: 'a committed ControlledTransaction', handle: committed },
    { label: 'a rolled-back ControlledTransaction', handle: rolledBack },
  ]
}
