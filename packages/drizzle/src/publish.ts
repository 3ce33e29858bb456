import {
  createPostgresPublisher,
  type PostgresPublisherSpec,
  type PostgresPublishStatement,
  type PublishFn,
  type PublishManyFn,
} from '@outboxkit/core'
import { DrizzleQueryError } from 'drizzle-orm/errors'
import { ADAPTER, notInTransaction } from './refusal.js'
import {
  checkTransaction,
  type DrizzleTransaction,
  driverOf,
  driverOfHandle,
  sessionOf,
} from './transaction.js'

/**
 * Drizzle wraps driver errors in a DrizzleQueryError whose message holds the statement and every
 * parameter (the whole payload); the driver's own error carries the SQLSTATE that tells a timeout
 * from other failures. Reported instead, so payloads stay out of messages and logs.
 */
function driverError(err: unknown): unknown {
  const wrapped = typeof DrizzleQueryError === 'function' && err instanceof DrizzleQueryError
  return wrapped && err.cause !== undefined ? err.cause : err
}

const spec: PostgresPublisherSpec<DrizzleTransaction> = {
  name: ADAPTER,
  checkTransaction,
  async execute(tx: DrizzleTransaction, statement: PostgresPublishStatement) {
    const session = sessionOf(tx)
    try {
      return await driverOf(session).execute(session, statement)
    } catch (err) {
      throw driverError(err)
    }
  },
}

/** For drivers that can report their transaction state (node-postgres, PGlite): the plain statement. */
const plain = createPostgresPublisher<DrizzleTransaction>(spec)
/** For drivers that cannot (postgres.js, drivers the adapter does not know): the guarded statement. */
const guarded = createPostgresPublisher<DrizzleTransaction>({
  ...spec,
  guarded: {
    refuse: () =>
      notInTransaction(
        'a Drizzle transaction that already committed or rolled back (postgres.js would run the statement in autocommit)',
      ),
  },
})
const publisherFor = (tx: unknown) => (driverOfHandle(tx)?.guarded ? guarded : plain)

/**
 * Publishes one message inside a Drizzle transaction: the INSERT (and the relay's NOTIFY wake-up)
 * run as one statement, one round trip, on the transaction's connection, so the message commits
 * or rolls back with it. Works in nested transactions (savepoints) too.
 *
 * Drivers: `drizzle-orm/node-postgres`, `drizzle-orm/postgres-js` and `drizzle-orm/pglite` are
 * tested. The transaction check costs no extra round trip: Drizzle's brand check
 * (`is(tx, PgTransaction)`), then the driver's own state. node-postgres (pg >= 8.21) reads the
 * connection's transaction status when called and again when pg sends the statement; PGlite reads
 * its transaction's `closed` flag; postgres.js has no such state, so a transaction-local marker is
 * pipelined with a guarded statement that writes nothing outside the marker's transaction.
 *
 * @example
 * ```ts
 * await db.transaction(async (tx) => {
 *   await tx.insert(orders).values(order)
 *   await publish(outbox, tx, { topic: 'order.created', payload: { orderId: order.id }, key: order.id })
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the root `db` or anything that is not a Drizzle
 * PostgreSQL transaction, or a transaction that already ended or failed (nothing is written);
 * `INVALID_MESSAGE` for a bad message; `TIMEOUT` when the server's `statement_timeout` or pg's
 * `query_timeout` fires; `DATABASE` otherwise.
 */
export const publish: PublishFn<DrizzleTransaction> = (outbox, tx, message) =>
  publisherFor(tx).publish(outbox, tx, message)

/**
 * Publishes several messages inside a Drizzle transaction in one statement (one round trip), all
 * or nothing, results in the order of `messages`. Same checks and errors as {@link publish}.
 *
 * @example
 * ```ts
 * const [a, b] = await publishMany(outbox, tx, [msgA, msgB])
 * ```
 */
export const publishMany: PublishManyFn<DrizzleTransaction> = (outbox, tx, messages) =>
  publisherFor(tx).publishMany(outbox, tx, messages)
