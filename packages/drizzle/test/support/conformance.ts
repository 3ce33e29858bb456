import {
  type Inspector,
  type PublishContext,
  type Publisher,
  runPublishConformance,
} from '@outboxkit/conformance'
import { inboxHandler, processOnce, publish, publishMany } from '@outboxkit/drizzle'

/** A Drizzle db or transaction: `transaction(fn)` runs `fn` in a transaction (a savepoint on a tx). */
interface Transactional<TTx> {
  transaction<T>(fn: (tx: TTx) => Promise<T>): Promise<T>
}

/**
 * What a driver's conformance file opens: the suite's context, with a raw-SQL `inspector` (closed
 * at teardown, before `close`) in place of `inspect`. Without `transaction`, the suite runs
 * `db.transaction(fn)`; without `savepoint`, the tx's own nested `tx.transaction(fn)`.
 */
export interface DrizzleDatabase<TTx>
  extends Omit<PublishContext<TTx>, 'inspect' | 'teardown' | 'transaction'>,
    Partial<Pick<PublishContext<TTx>, 'transaction'>> {
  db?: Transactional<TTx>
  inspector: Inspector
  /** Closes what the file opened besides the inspector. */
  close?(): unknown
}

/**
 * Runs the publish conformance suite on a Drizzle driver (`label`: which one), with the adapter's
 * `publish` or another of its paths (`publisher`).
 */
export function runDrizzleConformance<TTx>(
  label: string,
  open: () => Promise<DrizzleDatabase<TTx>>,
  publisher: Publisher = { publish, publishMany, processOnce },
): void {
  runPublishConformance<TTx>({
    name: 'drizzle',
    label,
    publish: publisher.publish,
    publishMany: publisher.publishMany,
    ...(publisher.processOnce ? { processOnce: publisher.processOnce } : {}),
    async setup() {
      const { db, inspector, close, ...context } = await open()
      return {
        transaction: (fn) => db!.transaction(fn),
        savepoint: (tx, fn) => (tx as unknown as Transactional<TTx>).transaction(fn),
        ...context,
        // better-sqlite3 transactions are synchronous: inboxHandler is for the async drivers.
        ...(context.dialect === 'sqlite' || !db
          ? {}
          : { inboxHandler: (inbox, fn) => inboxHandler(inbox, db as never, fn as never) }),
        inspect: (text, params) => inspector.query(text, params),
        async teardown() {
          await inspector.close()
          await close?.()
        },
      }
    },
  })
}
