import { createPostgresPublisher, type PostgresPublishStatement } from '@outboxkit/core/adapter'
import { ADAPTER, checkTransaction, type KyselyTransaction, refuse, runRaw } from './transaction.js'

async function execute(
  tx: KyselyTransaction,
  statement: PostgresPublishStatement,
): Promise<readonly Record<string, unknown>[]> {
  try {
    return (await runRaw(tx, statement.text, statement.values)).rows
  } catch (err) {
    // PostgreSQL refused the statement because an earlier one failed in this transaction.
    if ((err as { code?: unknown } | null)?.code === '25P02') {
      throw refuse(
        'a transaction that failed (an earlier statement errored, so PostgreSQL ignores everything until ROLLBACK)',
        err,
        'Roll it back and retry the unit of work, or wrap the statement that may fail in a savepoint. Nothing was written.',
      )
    }
    throw err
  }
}

/**
 * `publish` / `publishMany` on a Kysely transaction of a PostgreSQL dialect: the INSERT and the
 * relay's NOTIFY wake-up as one raw statement, one round trip.
 */
export const postgresPublisher = createPostgresPublisher<KyselyTransaction>({
  name: ADAPTER,
  checkTransaction,
  execute,
})
