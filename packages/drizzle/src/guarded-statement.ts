import {
  encodeArrayParameters,
  POSTGRES_TRANSACTION_MARKER,
  type PostgresPublishStatement,
  snakeCaseRows,
} from '@outboxkit/core/adapter'
import { type DrizzleSession, executeThroughDrizzle, type Rows } from './driver.js'
import { notInTransaction } from './refusal.js'

function sqlState(err: unknown): unknown {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null | undefined
  return e?.code ?? e?.cause?.code
}

/**
 * Runs core's guarded publish statement for drivers that keep no transaction state: core's
 * `POSTGRES_TRANSACTION_MARKER` and the statement are handed to the driver together, through
 * Drizzle's query path on the transaction's connection (postgres.js pipelines them: one round
 * trip). The marker sets a transaction-local flag and the guarded statement writes only while it
 * still sees it, so only when both ran in the same open transaction: in autocommit (a `tx` kept
 * after its transaction ended) the flag is gone when the marker's own statement ends, and a
 * COMMIT slipped in between (a publish not awaited) resets it. The statement then writes nothing
 * and core throws NOT_IN_TRANSACTION.
 *
 * @param name - makes the statement a prepared one (see the postgres.js driver)
 */
export async function executeGuarded(
  session: DrizzleSession,
  statement: PostgresPublishStatement,
  name?: string,
): Promise<Rows> {
  const values = encodeArrayParameters(statement.values)
  const [marker, insert] = await Promise.allSettled([
    executeThroughDrizzle(session, {
      text: POSTGRES_TRANSACTION_MARKER,
      values: [],
      name: 'outboxkit_marker',
    }),
    executeThroughDrizzle(session, { ...statement, values }, name),
  ])
  for (const result of [marker, insert]) {
    if (result.status === 'rejected' && sqlState(result.reason) === '25P02') {
      throw notInTransaction(
        'a Drizzle transaction that failed (a statement in it raised an error, so it can only roll back)',
      )
    }
  }
  if (marker.status === 'rejected') throw marker.reason
  if (insert.status === 'rejected') throw insert.reason
  return snakeCaseRows(insert.value)
}
