import type * as mysql from 'mysql2/promise'
import type pg from 'pg'

/** How a driver ends a transaction: {@link commitOrRollback} calls one of the two. */
export interface TransactionEnd {
  commit(): unknown
  rollback(): unknown
}

/**
 * Runs `fn` (inside a transaction the caller began): `commit` when it resolves, `rollback` when it
 * or the commit throws, then rethrows. An error of the rollback itself is dropped, so the test sees
 * the error that caused it.
 */
export async function commitOrRollback<T>(end: TransactionEnd, fn: () => Promise<T>): Promise<T> {
  try {
    const result = await fn()
    await end.commit()
    return result
  } catch (err) {
    await (async () => end.rollback())().catch(() => {})
    throw err
  }
}

/**
 * A nested transaction through SQL: `SAVEPOINT <name>`, then `RELEASE SAVEPOINT` when `fn`
 * resolves or `ROLLBACK TO SAVEPOINT` (or `rollbackSql`) when it throws. `exec` runs one statement
 * on the transaction.
 */
export function sqlSavepoint<TTx>(
  exec: (tx: TTx, sql: string) => unknown,
  { name = 'sp', rollbackSql }: { name?: string; rollbackSql?: string } = {},
): <T>(tx: TTx, fn: (tx: TTx) => Promise<T>) => Promise<T> {
  return async (tx, fn) => {
    await exec(tx, `SAVEPOINT ${name}`)
    return commitOrRollback(
      {
        commit: () => exec(tx, `RELEASE SAVEPOINT ${name}`),
        rollback: () => exec(tx, rollbackSql ?? `ROLLBACK TO SAVEPOINT ${name}`),
      },
      () => fn(tx),
    )
  }
}

/** A transaction through some driver API: how it begins and ends, and (optional) how its connection is given back. */
export interface TransactionSteps extends TransactionEnd {
  begin(): unknown
  release?(): unknown
}

/** `begin`, then {@link commitOrRollback} around `fn`; `release` in every case. */
export async function runTransaction<T>(steps: TransactionSteps, fn: () => Promise<T>): Promise<T> {
  try {
    await steps.begin()
    return await commitOrRollback(steps, fn)
  } finally {
    await steps.release?.()
  }
}

/** Runs `fn` in `BEGIN` ... `COMMIT` (or `ROLLBACK` when it throws) on a client of `pool`, then releases it. */
export async function inPgTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect()
  const sql = (text: string) => () => client.query(text)
  const steps = { begin: sql('BEGIN'), commit: sql('COMMIT'), rollback: sql('ROLLBACK') }
  return runTransaction({ ...steps, release: () => client.release() }, () => fn(client))
}

/** Runs `fn` in a transaction on a connection of the mysql2/promise `pool`, then releases it. */
export async function inMysqlTransaction<T>(
  pool: mysql.Pool,
  fn: (conn: mysql.PoolConnection) => Promise<T>,
): Promise<T> {
  const c = await pool.getConnection()
  return runTransaction(
    {
      begin: () => c.beginTransaction(),
      commit: () => c.commit(),
      rollback: () => c.rollback(),
      release: () => c.release(),
    },
    () => fn(c),
  )
}

/**
 * Runs the transactions of one connection one at a time, as an async wrapper over a single
 * connection (better-sqlite3, TypeORM's SQLite drivers) must: each `fn` starts when the one
 * before it settled.
 */
export function serialQueue(): <T>(fn: () => Promise<T>) => Promise<T> {
  let queue: Promise<unknown> = Promise.resolve()
  return (fn) => {
    const run = queue.then(fn, fn)
    queue = run.catch(() => {})
    return run
  }
}
