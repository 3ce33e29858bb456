import { OutboxError } from '@outboxkit/core'
import { formatValue } from '@outboxkit/core/adapter'
import { CompiledQuery, type QueryResult } from 'kysely'

/**
 * The slice of a Kysely transaction that `publish` needs: a `Transaction` (the `trx` of
 * `db.transaction().execute(async (trx) => ...)`), a `ControlledTransaction`
 * (`await db.startTransaction().execute()`), or a savepoint handle returned by
 * `trx.savepoint(name).execute()`, on PostgreSQL, MySQL/MariaDB or SQLite.
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

/** The adapter name in error messages. */
export const ADAPTER = 'kysely'

const HOW =
  'Pass the trx of db.transaction().execute(async (trx) => { ...; await publish(outbox, trx, message) }), or a db.startTransaction() handle before its commit() or rollback(). Nothing was written.'

/** The `NOT_IN_TRANSACTION` error of this adapter. */
export function refuse(what: string, cause?: unknown, how = HOW): OutboxError {
  return new OutboxError('NOT_IN_TRANSACTION', `publish needs an open transaction, got ${what}. ${how}`, {
    source: ADAPTER,
    ...(cause === undefined ? {} : { cause }),
  })
}

/**
 * True when `handle` calls itself a Kysely transaction (`isTransaction === true`) and has an
 * executor to read its dialect from. Whether it is still open is for {@link checkTransaction}.
 */
export function claimsTransaction(
  handle: unknown,
): handle is KyselyTransaction & { getExecutor(): { readonly adapter: object } } {
  const h = handle as { isTransaction?: unknown; getExecutor?: unknown; withoutPlugins?: unknown } | null
  return (
    typeof h === 'object' &&
    h !== null &&
    h.isTransaction === true &&
    typeof h.getExecutor === 'function' &&
    typeof h.withoutPlugins === 'function'
  )
}

/**
 * Returns `handle` when Kysely says it is an open transaction: `isTransaction`, and on a
 * `ControlledTransaction` (or its savepoint handles) neither `isCommitted` nor `isRolledBack`.
 * Synchronous, sends nothing.
 *
 * @throws OutboxError `NOT_IN_TRANSACTION` otherwise.
 */
export function checkTransaction(handle: unknown): KyselyTransaction {
  const h = handle as Partial<Record<keyof KyselyTransaction | keyof ControlledState, unknown>> | null
  if (!h || typeof h !== 'object') throw refuse(formatValue(handle))
  if (typeof h.isTransaction !== 'boolean' || typeof h.executeQuery !== 'function') {
    throw refuse(`${formatValue(handle)}, which is not a Kysely instance`)
  }
  if (typeof h.withoutPlugins !== 'function') throw refuse(`${formatValue(handle)} without withoutPlugins()`)
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
 * after its transaction ended (a `Transaction` kept after its `execute()` callback finished, or a
 * `ControlledTransaction` whose commit or rollback ran while publish waited for the connection),
 * as `NOT_IN_TRANSACTION`; `undefined` for any other error.
 */
export function endedTransaction(err: unknown): OutboxError | undefined {
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
  return undefined
}

/**
 * Runs one raw statement on the transaction's own connection, without plugins: result
 * transformers such as `CamelCasePlugin` would rename the columns core reads, and the statement
 * already names its table (`defineOutbox`). Kysely's "already committed / rolled back" error
 * becomes `NOT_IN_TRANSACTION`.
 */
export async function runRaw(
  tx: KyselyTransaction,
  sql: string,
  params: readonly unknown[],
): Promise<QueryResult<Record<string, unknown>>> {
  try {
    return await tx
      .withoutPlugins()
      .executeQuery<Record<string, unknown>>(CompiledQuery.raw(sql, [...params]))
  } catch (err) {
    throw endedTransaction(err) ?? err
  }
}
