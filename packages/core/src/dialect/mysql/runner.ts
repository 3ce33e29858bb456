import type { MysqlExecutor, MysqlQuery, MysqlResult } from './backend.js'
import { deadlockBackoffMs, isMysqlDeadlock, MYSQL_DEADLOCK_ATTEMPTS, toMysqlOutboxError } from './errors.js'

// How the MySQL backend runs its statements: every transaction (or autocommit statement) run
// again from the start when InnoDB rolls it back as a deadlock victim.

/**
 * Runs `attempt` (one transaction, or one autocommit statement) again when InnoDB chose it as
 * a deadlock victim: the server rolled all of it back, so a fresh run is safe and re-reads
 * every fence. Anything else, or the last deadlock, becomes an {@link OutboxError}.
 */
async function retryingDeadlocks<T>(source: string, what: string, attempt: () => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt()
    } catch (err) {
      if (!isMysqlDeadlock(err)) throw toMysqlOutboxError(err, source, what)
      if (n >= MYSQL_DEADLOCK_ATTEMPTS) {
        throw toMysqlOutboxError(
          err,
          source,
          `${what} (chosen as a deadlock victim ${n} times in a row, retried after each)`,
        )
      }
      await new Promise((resolve) => setTimeout(resolve, deadlockBackoffMs(n)))
    }
  }
}

/** How the backend runs its statements on a {@link MysqlExecutor}: each run retried after a deadlock. */
export interface MysqlRunner {
  /** One statement outside any transaction (autocommit). */
  run(what: string, sql: string, params: readonly unknown[]): Promise<MysqlResult>
  /** `fn` in one READ COMMITTED transaction. */
  transaction<T>(what: string, fn: (query: MysqlQuery) => Promise<T>): Promise<T>
  /**
   * One admin write (purge, redrive, discard) in a transaction of its own, so it commits even on
   * a pooled session with `autocommit = 0` (where a lone statement would stay uncommitted on the
   * connection), and at READ COMMITTED (no gap locks that would stall producers). Returns the
   * affected rows.
   */
  write(what: string, sql: string, params: readonly unknown[]): Promise<number>
}

/** The {@link MysqlRunner} of `executor`. */
export function mysqlRunner(executor: MysqlExecutor): MysqlRunner {
  const source = executor.name
  const transaction = <T>(what: string, fn: (query: MysqlQuery) => Promise<T>): Promise<T> =>
    retryingDeadlocks(source, what, () => executor.transaction(fn))
  return {
    run: (what, sql, params) => retryingDeadlocks(source, what, () => executor.query(sql, params)),
    transaction,
    write: (what, sql, params) => transaction(what, async (query) => (await query(sql, params)).affectedRows),
  }
}

/** Milliseconds as the whole microseconds MySQL's `INTERVAL ? MICROSECOND` takes (never negative). */
export const microseconds = (ms: number): number => Math.max(0, Math.round(ms * 1000))
