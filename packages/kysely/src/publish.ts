import {
  createPostgresPublisher,
  describe,
  OutboxError,
  type PostgresPublishStatement,
} from '@outboxkit/core'
import { CompiledQuery, type QueryResult } from 'kysely'

/**
 * The slice of a Kysely transaction that `publish` needs: a `Transaction` (the `trx` of
 * `db.transaction().execute(async (trx) => ...)`), a `ControlledTransaction`
 * (`await db.startTransaction().execute()`), or a savepoint handle returned by
 * `trx.savepoint(name).execute()`.
 *
 * `isTransaction` is typed `true`, as Kysely types it on `Transaction`, so handing `publish` the
 * root `Kysely` instance (or a `db.connection()` handle) is already a compile error.
 */
export interface KyselyTransaction {
  /** Kysely's own signal: `true` on a `Transaction` and a `ControlledTransaction`, `false` on the root db. */
  readonly isTransaction: true
  /** Kysely's public raw-query path (runs on the transaction's own connection). */
  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>
  /** The same transaction without plugins (so a `CamelCasePlugin` cannot rename result columns). */
  withoutPlugins(): KyselyTransaction
}

/** What a `ControlledTransaction` adds: Kysely's own state of the transaction. */
interface ControlledState {
  readonly isCommitted: boolean
  readonly isRolledBack: boolean
}

const ADAPTER = 'kysely'

const HOW =
  'Pass the trx of db.transaction().execute(async (trx) => { ...; await publish(outbox, trx, message) }), or a db.startTransaction() handle before its commit() or rollback(). Nothing was written.'

function refuse(what: string, cause?: unknown, how = HOW): OutboxError {
  return new OutboxError('NOT_IN_TRANSACTION', `publish needs an open transaction, got ${what}. ${how}`, {
    source: ADAPTER,
    ...(cause === undefined ? {} : { cause }),
  })
}

function checkTransaction(handle: unknown): KyselyTransaction {
  const h = handle as Partial<Record<keyof KyselyTransaction | keyof ControlledState, unknown>> | null
  if (!h || typeof h !== 'object') throw refuse(describe(handle))
  if (typeof h.isTransaction !== 'boolean' || typeof h.executeQuery !== 'function') {
    throw refuse(`${describe(handle)}, which is not a Kysely instance`)
  }
  if (typeof h.withoutPlugins !== 'function') throw refuse(`${describe(handle)} without withoutPlugins()`)
  if (h.isTransaction !== true) {
    throw refuse(
      'a Kysely instance that is not a transaction (the root db or a db.connection() handle: each query there runs in autocommit, so the message would commit on its own)',
    )
  }
  // A ControlledTransaction (and its savepoint handles) carries Kysely's own state of the transaction.
  if (typeof h.isCommitted === 'boolean' || typeof h.isRolledBack === 'boolean') {
    if (h.isCommitted === true) throw refuse('a ControlledTransaction that was already committed')
    if (h.isRolledBack === true) throw refuse('a ControlledTransaction that was already rolled back')
  }
  return h as unknown as KyselyTransaction
}

/**
 * The error Kysely (>= 0.28.11) throws, before sending any SQL, when a transaction handle is used
 * after its transaction ended: a `Transaction` kept after its `execute()` callback finished, or a
 * `ControlledTransaction` whose commit or rollback ran while publish waited for the connection.
 */
function endedTransaction(err: unknown): OutboxError | undefined {
  if (!(err instanceof Error)) return undefined
  if (err.message === 'Transaction is already committed') {
    return refuse(
      'a Kysely transaction that was already committed (the handle was used after its transaction ended)',
      err,
    )
  }
  if (err.message === 'Transaction is already rolled back') {
    return refuse(
      'a Kysely transaction that was already rolled back (the handle was used after its transaction ended)',
      err,
    )
  }
  // PostgreSQL refused the statement because an earlier one failed in this transaction.
  if ((err as { code?: unknown }).code === '25P02') {
    return refuse(
      'a transaction that failed (an earlier statement errored, so PostgreSQL ignores everything until ROLLBACK)',
      err,
      'Roll it back and retry the unit of work, or wrap the statement that may fail in a savepoint. Nothing was written.',
    )
  }
  return undefined
}

async function execute(
  tx: KyselyTransaction,
  statement: PostgresPublishStatement,
): Promise<readonly Record<string, unknown>[]> {
  // Plugins are dropped for this one query: result transformers such as CamelCasePlugin would
  // rename the columns core reads, and the statement already names its table (defineOutbox).
  const query = CompiledQuery.raw(statement.text, [...statement.values])
  try {
    const result = await tx.withoutPlugins().executeQuery<Record<string, unknown>>(query)
    return result.rows
  } catch (err) {
    throw endedTransaction(err) ?? err
  }
}

const publisher = createPostgresPublisher<KyselyTransaction>({ name: ADAPTER, checkTransaction, execute })

/**
 * Publishes one message inside a Kysely transaction: the INSERT (and the relay's NOTIFY
 * wake-up) run as one raw statement on the transaction's connection, one round trip, so the
 * message commits or rolls back with your transaction. Works on any PostgreSQL dialect.
 *
 * The transaction check costs no round trip: it reads Kysely's `isTransaction` (and
 * `isCommitted` / `isRolledBack` on a `ControlledTransaction`); a callback `Transaction` used after
 * its transaction ended is stopped by Kysely itself before any SQL is sent.
 *
 * @example
 * ```ts
 * await db.transaction().execute(async (trx) => {
 *   await trx.insertInto('orders').values(order).execute()
 *   await publish(outbox, trx, { topic: 'order.created', payload: { orderId: order.id } })
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the root db, a `db.connection()` handle, a
 * transaction that already committed, rolled back or failed; `INVALID_MESSAGE` for a bad message;
 * `TIMEOUT` when the server's `statement_timeout` fires; `DATABASE` otherwise.
 */
export const publish = publisher.publish

/**
 * Publishes several messages inside a Kysely transaction in one statement (one round trip), all
 * or nothing. Results come back in the order of `messages`. Same checks and errors as
 * {@link publish}.
 *
 * @example
 * ```ts
 * const [a, b] = await publishMany(outbox, trx, [msgA, msgB])
 * ```
 */
export const publishMany = publisher.publishMany
