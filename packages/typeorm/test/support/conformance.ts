import {
  commitOrRollback,
  type PublishContext,
  type RefusedHandle,
  runPublishConformance,
} from '@outboxkit/conformance'
import { inboxHandler, processOnce, publish, publishMany } from '@outboxkit/typeorm'
import type { DataSource, EntityManager, QueryRunner } from 'typeorm'

/** The two transaction styles the TypeORM adapter accepts, each run through the whole suite. */
export type TypeormStyle = 'EntityManager' | 'QueryRunner'

/** What a dialect's test file opens for one run: the suite's context without the transactions. */
export interface TypeormDatabase extends Omit<PublishContext<never>, 'transaction' | 'savepoint'> {
  dataSource: DataSource
  /**
   * Runs the application's transactions one at a time when the driver needs it (TypeORM's SQLite
   * drivers share one connection). Default: as they come.
   */
  serial?: <T>(fn: () => Promise<T>) => Promise<T>
}

/** A QueryRunner's transaction: `startTransaction()`, then commit or roll back around `fn`. */
async function inTransaction<T>(qr: QueryRunner, fn: (qr: QueryRunner) => Promise<T>): Promise<T> {
  await qr.startTransaction()
  return commitOrRollback(
    { commit: () => qr.commitTransaction(), rollback: () => qr.rollbackTransaction() },
    () => fn(qr),
  )
}

/**
 * Runs the publish conformance suite twice on a dialect: with the EntityManager of
 * `dataSource.transaction()` (nested `manager.transaction()` as the savepoint), and with a
 * QueryRunner after `startTransaction()` (a second `startTransaction()` as the savepoint).
 * `dialect` names the run (`typeorm (<dialect>, <style>)`; none: `typeorm (<style>)`).
 */
export function runTypeormConformance(
  dialect: string | undefined,
  open: (style: TypeormStyle) => Promise<TypeormDatabase>,
): void {
  const label = (style: TypeormStyle) => `typeorm (${dialect ? `${dialect}, ` : ''}${style})`
  const direct = <T>(fn: () => Promise<T>) => fn()
  runPublishConformance<EntityManager>({
    name: 'typeorm',
    label: label('EntityManager'),
    publish,
    publishMany,
    processOnce,
    async setup() {
      const db = await open('EntityManager')
      const serial = db.serial ?? direct
      return {
        ...db,
        transaction: (fn) => serial(() => db.dataSource.transaction(fn)),
        inboxHandler: (inbox, fn) => (message) =>
          serial(() => inboxHandler(inbox, db.dataSource, fn)(message)),
        savepoint: (manager, fn) => manager.transaction(fn),
      }
    },
  })
  runPublishConformance<QueryRunner>({
    name: 'typeorm',
    label: label('QueryRunner'),
    publish,
    publishMany,
    processOnce,
    async setup() {
      const db = await open('QueryRunner')
      const serial = db.serial ?? direct
      return {
        ...db,
        transaction: (fn) =>
          serial(async () => {
            const qr = db.dataSource.createQueryRunner()
            try {
              return await inTransaction(qr, fn)
            } finally {
              await qr.release()
            }
          }),
        savepoint: inTransaction,
      }
    },
  })
}

/** Makes QueryRunners of `dataSource` and remembers them, so that the run's teardown can release them. */
export function queryRunners(dataSource: DataSource): {
  runner(): QueryRunner
  /** Rolls back what is still open (TypeORM's transaction and any raw one) and releases every runner. */
  releaseAll(): Promise<void>
} {
  const runners: QueryRunner[] = []
  return {
    runner() {
      const qr = dataSource.createQueryRunner()
      runners.push(qr)
      return qr
    },
    async releaseAll() {
      for (const qr of runners) {
        if (qr.isReleased) continue
        if (qr.isTransactionActive) await qr.rollbackTransaction().catch(() => {})
        await qr.query('ROLLBACK').catch(() => {})
        await qr.release()
      }
    },
  }
}

/**
 * The handles every dialect refuses: the DataSource and its managers, and QueryRunners whose
 * transaction committed or rolled back (not released).
 */
export async function endedHandles(
  dataSource: DataSource,
  runner: () => QueryRunner,
): Promise<RefusedHandle[]> {
  const committed = runner()
  await committed.startTransaction()
  await committed.commitTransaction()
  const rolledBack = runner()
  await rolledBack.startTransaction()
  await rolledBack.rollbackTransaction()
  return [
    { label: 'a DataSource', handle: dataSource },
    { label: 'dataSource.manager (no QueryRunner)', handle: dataSource.manager },
    { label: 'dataSource.createEntityManager()', handle: dataSource.createEntityManager() },
    { label: 'a QueryRunner committed but not released', handle: committed },
    { label: 'the manager of a QueryRunner committed but not released', handle: committed.manager },
    { label: 'a QueryRunner rolled back but not released', handle: rolledBack },
    { label: 'null', handle: null },
  ]
}

/**
 * The handles a server dialect (PostgreSQL, MySQL) refuses besides {@link endedHandles}: runners
 * never connected, in autocommit, released inside a transaction (`beforeRelease` runs first), after
 * a raw BEGIN; the driver's own connection of an open transaction (`client` names it); an object
 * that only looks like a runner.
 */
export async function serverHandles(
  runner: () => QueryRunner,
  { client, beforeRelease }: { client: string; beforeRelease?: (qr: QueryRunner) => Promise<void> },
): Promise<RefusedHandle[]> {
  const neverConnected = runner()
  const autocommit = runner()
  await autocommit.connect()
  const released = runner()
  await released.startTransaction()
  await beforeRelease?.(released)
  await released.release()
  const rawBegin = runner()
  await rawBegin.query('BEGIN')
  const open = runner()
  await open.startTransaction()
  return [
    { label: 'a QueryRunner never connected, no transaction', handle: neverConnected },
    { label: 'a connected QueryRunner in autocommit', handle: autocommit },
    { label: 'the manager of a QueryRunner in autocommit', handle: autocommit.manager },
    { label: 'a released QueryRunner (its transaction was open)', handle: released },
    { label: "a QueryRunner after a raw query('BEGIN') (not tracked by TypeORM)", handle: rawBegin },
    { label: `the ${client} of an open transaction (not a TypeORM handle)`, handle: await open.connect() },
    { label: 'a plain object', handle: { query: () => {}, isTransactionActive: true, isReleased: false } },
  ]
}
