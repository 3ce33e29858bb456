import {
  createMysqlPublisher,
  MARIADB_TRANSACTION_GUARD,
  type MysqlResult,
  type MysqlStatement,
  type Publisher,
} from '@outboxkit/core/adapter'
import { mapPrismaError, sqlState } from './prisma-errors.js'
import { rawRows } from './raw-rows.js'
import {
  ADAPTER,
  checkPrismaTransaction,
  notInTransaction,
  type PrismaTransactionClient,
} from './transaction-client.js'

/**
 * Engines (a root client's `_engineConfig`, shared by its transaction clients) whose server
 * rejected `@@in_transaction`: MySQL, which has no such variable. Their statements go unguarded.
 */
const withoutGuard = new WeakSet<object>()

function engineOf(tx: PrismaTransactionClient): object | undefined {
  const config = (tx as unknown as Record<string, unknown>)._engineConfig
  return config !== null && typeof config === 'object' ? config : undefined
}

/** Thrown (as the cause of core's error) when MySQL rejected the guard: run the publish again unguarded. */
class GuardUnsupported extends Error {}

const truthy = (v: unknown): boolean => v === true || v === 1 || v === 1n || v === '1'

const endedUnderneath = () =>
  notInTransaction(
    'a transaction client whose database transaction already ended while Prisma still holds it open: MySQL rolls back the whole transaction on a deadlock (error 1213) or a lock wait timeout with innodb_rollback_on_timeout, and the connection then runs every statement in autocommit. Let the error you caught end the $transaction, then retry it',
  )

async function execute(tx: PrismaTransactionClient, statement: MysqlStatement): Promise<MysqlResult> {
  try {
    if (!statement.write) {
      const rows = rawRows(await tx.$queryRawUnsafe(statement.sql, ...statement.params))
      return { rows, affectedRows: 0 }
    }
    const affectedRows = Number(await tx.$executeRawUnsafe(statement.sql, ...statement.params))
    if (statement.guarded && affectedRows === 0) {
      // Either the guard was false (nothing written: the transaction is gone) or every row was a
      // taken dedupKey on a pool opened with foundRows: false. Ask the session which one.
      const [row] = rawRows(await tx.$queryRawUnsafe(`SELECT ${MARIADB_TRANSACTION_GUARD} AS open`))
      if (!truthy(row?.open)) throw endedUnderneath()
    }
    return { rows: [], affectedRows }
  } catch (err) {
    if (statement.guarded && sqlState(err) === '1193' && /in_transaction/.test(String(err))) {
      // MySQL: "Unknown system variable 'in_transaction'". The statement failed, nothing was written.
      const engine = engineOf(tx)
      if (engine) withoutGuard.add(engine)
      throw new GuardUnsupported('MySQL has no @@in_transaction', { cause: err })
    }
    throw mapPrismaError(err, 'mysql') ?? err
  }
}

const guarded = createMysqlPublisher<PrismaTransactionClient>({
  name: ADAPTER,
  checkTransaction: checkPrismaTransaction,
  execute,
  guard: (tx) => {
    const engine = engineOf(tx)
    return engine && withoutGuard.has(engine) ? undefined : MARIADB_TRANSACTION_GUARD
  },
})

const unguarded = createMysqlPublisher<PrismaTransactionClient>({
  name: ADAPTER,
  checkTransaction: checkPrismaTransaction,
  execute,
})

function guardUnsupported(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof GuardUnsupported) return true
  }
  return false
}

/**
 * `publish`/`publishMany` on a Prisma transaction client of the `mysql` provider (MySQL 8+ and
 * MariaDB 10.6+ through `@prisma/adapter-mariadb`).
 *
 * On MariaDB every write carries `MARIADB_TRANSACTION_GUARD`, so it writes nothing if the
 * session is no longer inside a transaction (MySQL and MariaDB end the whole transaction on a
 * deadlock, and Prisma keeps handing out the `tx`, whose next statements would then autocommit);
 * a write that changed no row is followed by one `SELECT` of the guard to tell that apart from
 * taken dedup keys. MySQL has no `@@in_transaction`: the first guarded statement fails there
 * (writing nothing), the client's engine is remembered as unguarded, and the publish runs again
 * without the guard.
 */
export const mysqlPublisher: Publisher<PrismaTransactionClient> = {
  publish: (outbox, tx, message) =>
    guarded.publish(outbox, tx, message).catch((err: unknown) => {
      if (!guardUnsupported(err)) throw err
      return unguarded.publish(outbox, tx, message)
    }),
  publishMany: (outbox, tx, messages) =>
    guarded.publishMany(outbox, tx, messages).catch((err: unknown) => {
      if (!guardUnsupported(err)) throw err
      return unguarded.publishMany(outbox, tx, messages)
    }),
  processOnce: (inbox, tx, message, fn) =>
    guarded.processOnce(inbox, tx, message, fn).catch((err: unknown) => {
      if (!guardUnsupported(err)) throw err
      return unguarded.processOnce(inbox, tx, message, fn)
    }),
}
