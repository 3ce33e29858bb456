import { OutboxError, type ProcessOnceFn } from '@outboxkit/core'
import { createPostgresPublisher, formatValue } from '@outboxkit/core/adapter'

/**
 * The slice of a PGlite `Transaction` (the `tx` of `db.transaction(async (tx) => ...)`) that
 * `publish` needs.
 */
export interface PgliteTransaction {
  query<T>(query: string, params?: unknown[]): Promise<{ rows: T[] }>
  exec(query: string): Promise<unknown>
  rollback(): Promise<void>
  /** PGlite's own signal: `true` once the transaction committed or rolled back. */
  readonly closed: boolean
}

const ADAPTER = 'pglite'

function refuse(what: string): OutboxError {
  return new OutboxError(
    'NOT_IN_TRANSACTION',
    `publish needs an open PGlite transaction, got ${what}. Call it with the tx of db.transaction(async (tx) => { ...; await publish(outbox, tx, message) }). Nothing was written.`,
    { source: ADAPTER },
  )
}

function checkTransaction(handle: unknown): PgliteTransaction {
  const h = handle as
    | (Partial<PgliteTransaction> & { transaction?: unknown; isInTransaction?: unknown })
    | null
  if (!h || typeof h !== 'object') throw refuse(formatValue(handle))
  if (typeof h.transaction === 'function' || typeof h.isInTransaction === 'function') {
    // Refused even inside a manual BEGIN: a query on the instance during db.transaction() would
    // wait for that transaction's lock, and outside one it would commit on its own.
    throw refuse('the PGlite instance itself (it runs each query in autocommit)')
  }
  if (
    typeof h.query !== 'function' ||
    typeof h.exec !== 'function' ||
    typeof h.rollback !== 'function' ||
    typeof h.closed !== 'boolean'
  ) {
    throw refuse(formatValue(handle))
  }
  if (h.closed) throw refuse('a transaction that already committed or rolled back')
  return h as PgliteTransaction
}

const publisher = createPostgresPublisher<PgliteTransaction>({
  name: ADAPTER,
  checkTransaction,
  async execute(tx, statement) {
    // Checked again right before the write: the transaction may have ended while we validated.
    if (tx.closed) throw refuse('a transaction that already committed or rolled back')
    // `closed` misses a COMMIT or ROLLBACK run by hand inside the callback (and, before PGlite
    // 0.5.5, a rollback by throw). A savepoint is only allowed inside a transaction block, so this
    // in-process probe (no network, well under a millisecond) proves the block is still open.
    try {
      await tx.exec('SAVEPOINT outboxkit_publish; RELEASE SAVEPOINT outboxkit_publish')
    } catch (err) {
      if ((err as { code?: unknown }).code === '25P01')
        throw refuse('a transaction that was already committed or rolled back by hand')
      throw err
    }
    const result = await tx.query<Record<string, unknown>>(statement.text, statement.values)
    return result.rows
  },
})

/**
 * Publishes one message inside a PGlite transaction: the INSERT (and the relay's NOTIFY
 * wake-up) run as one statement on `tx`, so the message commits or rolls back with it.
 *
 * @example
 * ```ts
 * await db.transaction(async (tx) => {
 *   await tx.query('INSERT INTO orders (id) VALUES ($1)', [orderId])
 *   await publish(outbox, tx, { topic: 'order.created', payload: { orderId } })
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the PGlite instance or a closed transaction;
 * `INVALID_MESSAGE` for a bad message; `DATABASE` when the statement fails.
 */
export const publish = publisher.publish

/**
 * Publishes several messages inside a PGlite transaction in one statement, all or nothing,
 * results in the order of `messages`. Same checks and errors as {@link publish}.
 */
export const publishMany = publisher.publishMany

/**
 * Runs `fn` once per message id for the inbox's consumer, inside a PGlite transaction (`db.transaction`):
 * inserts `(inbox.consumer, message.id)` into the inbox table on `tx` (one statement) and calls
 * `fn` only when that row is new. Resolves `{ processed: true, result }` (`result` is what `fn`
 * returned) or `{ processed: false }` (this consumer already processed the message; `fn` did not
 * run). The row commits or rolls back with your transaction: an error `fn` throws passes through,
 * your transaction rolls back, and the next delivery runs `fn` again. A concurrent transaction
 * with the same id waits for this one to end, then skips (it committed) or runs (it rolled back).
 * Never begins, commits or rolls back; see docs/inbox.md.
 *
 * @example
 * ```ts
 * await db.transaction(async (tx) => {
 *   await processOnce(inbox, tx, message, () => tx.query('INSERT INTO invoices (order_id) VALUES ($1)', [orderId]))
 * })
 * ```
 * @throws OutboxError `NOT_IN_TRANSACTION` for the same handles {@link publish} refuses (nothing is
 * written); `INVALID_MESSAGE` for a message without a string `id` (1 to 255 characters);
 * `INVALID_CONFIG` for something that is not an inbox of `defineInbox`, or no callback; `TIMEOUT`
 * and `DATABASE` as for publish. Whatever `fn` throws, unchanged.
 */
export const processOnce: ProcessOnceFn<PgliteTransaction> = publisher.processOnce
