import {
  createMysqlPublisher,
  MARIADB_TRANSACTION_GUARD,
  type MysqlResult,
  type MysqlStatement,
  toMysqlOutboxError,
} from '@outboxkit/core/adapter'
import {
  ADAPTER,
  checkTransaction,
  claimsTransaction,
  type KyselyTransaction,
  refuse,
  runRaw,
} from './transaction.js'

/** A Kysely transaction on MySQL or MariaDB that passed Kysely's checks, with its server's guard. */
interface MysqlTransaction {
  readonly trx: KyselyTransaction
  /** `MARIADB_TRANSACTION_GUARD` on MariaDB; none on MySQL, which has no `@@in_transaction`. */
  readonly guard: string | undefined
}

/** Per dialect adapter (one per Kysely instance): whether its server is MariaDB. */
const mariadb = new WeakMap<object, Promise<boolean>>()

/**
 * Whether the server is MariaDB, asked once per Kysely instance (`SELECT VERSION()` on the
 * transaction's connection, a read), then cached.
 */
function isMariaDb(trx: KyselyTransaction): Promise<boolean> {
  const adapter = claimsTransaction(trx) ? trx.getExecutor().adapter : undefined
  const cached = adapter && mariadb.get(adapter)
  if (cached) return cached
  const asked = runRaw(trx, 'SELECT VERSION() AS version', []).then((result) =>
    /mariadb/i.test(String(result.rows[0]?.version ?? '')),
  )
  if (adapter) {
    mariadb.set(adapter, asked)
    asked.catch(() => mariadb.delete(adapter))
  }
  return asked
}

async function checkMysqlTransaction(handle: unknown): Promise<MysqlTransaction> {
  const trx = checkTransaction(handle)
  let onMariaDb: boolean
  try {
    onMariaDb = await isMariaDb(trx)
  } catch (err) {
    throw toMysqlOutboxError(err, ADAPTER, 'publish (reading the server version)')
  }
  return { trx, guard: onMariaDb ? MARIADB_TRANSACTION_GUARD : undefined }
}

/**
 * Runs one statement of the publish on the transaction's connection. On MariaDB every write
 * carries the guard, so it writes nothing once the connection is out of its transaction; a
 * guarded write that affected no row is then either a `dedupKey` already taken (with the
 * connection flag `FOUND_ROWS` off) or the guard: the guard alone, read on the same connection,
 * tells which.
 */
async function execute(tx: MysqlTransaction, statement: MysqlStatement): Promise<MysqlResult> {
  const result = await runRaw(tx.trx, statement.sql, statement.params)
  const affectedRows = Number(result.numAffectedRows ?? 0n)
  if (statement.guarded && tx.guard && affectedRows === 0) {
    const { rows } = await runRaw(tx.trx, `SELECT ${tx.guard} AS in_transaction`, [])
    if (Number(rows[0]?.in_transaction) !== 1) {
      throw refuse(
        'a Kysely transaction whose connection is no longer inside a transaction (MariaDB reports autocommit: a raw COMMIT or ROLLBACK, a statement that commits implicitly such as DDL, or a deadlock ended it, or publish was not awaited before the transaction finished)',
        undefined,
        'Roll back and retry the unit of work, and await publish inside the transaction. Nothing was written.',
      )
    }
  }
  return { rows: result.rows, affectedRows }
}

/**
 * `publish` / `publishMany` on a Kysely transaction of a MySQL dialect (MySQL 8+, MariaDB 10.6+):
 * one INSERT, plus one SELECT when a message has a `dedupKey`.
 */
export const mysqlPublisher = createMysqlPublisher<MysqlTransaction>({
  name: ADAPTER,
  checkTransaction: checkMysqlTransaction,
  execute,
  guard: (tx) => tx.guard,
})
