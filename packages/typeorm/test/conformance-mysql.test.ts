import {
  mysqlInspector,
  type RefusedHandle,
  runPublishConformance,
  testMysqlUri,
} from '@outboxkit/conformance'
import { mysqlBackend } from '@outboxkit/mysql'
import { publish, publishMany } from '@outboxkit/typeorm'
import { DataSource, type EntityManager, type QueryRunner } from 'typeorm'

/** A mysql DataSource (MariaDB here), and the handles that are not open transactions, shared by both runs. */
async function open() {
  const dataSource = new DataSource({ type: 'mysql', url: testMysqlUri(), poolSize: 30 })
  await dataSource.initialize()
  const inspector = mysqlInspector()
  const backend = mysqlBackend({ uri: testMysqlUri(), connectionLimit: 4 })
  const runners: QueryRunner[] = []
  const runner = () => {
    const qr = dataSource.createQueryRunner()
    runners.push(qr)
    return qr
  }
  async function refusedHandles(): Promise<RefusedHandle[]> {
    const neverConnected = runner()
    const autocommit = runner()
    await autocommit.connect()
    const committed = runner()
    await committed.startTransaction()
    await committed.commitTransaction()
    const rolledBack = runner()
    await rolledBack.startTransaction()
    await rolledBack.rollbackTransaction()
    const released = runner()
    await released.startTransaction()
    await released.rollbackTransaction()
    await released.startTransaction()
    await released.release()
    const rawBegin = runner()
    await rawBegin.query('BEGIN')
    const open = runner()
    await open.startTransaction()
    return [
      { label: 'a DataSource', handle: dataSource },
      { label: 'dataSource.manager (no QueryRunner)', handle: dataSource.manager },
      { label: 'dataSource.createEntityManager()', handle: dataSource.createEntityManager() },
      { label: 'a QueryRunner never connected, no transaction', handle: neverConnected },
      { label: 'a connected QueryRunner in autocommit', handle: autocommit },
      { label: 'the manager of a QueryRunner in autocommit', handle: autocommit.manager },
      { label: 'a QueryRunner committed but not released', handle: committed },
      { label: 'the manager of a QueryRunner committed but not released', handle: committed.manager },
      { label: 'a QueryRunner rolled back but not released', handle: rolledBack },
      { label: 'a released QueryRunner (its transaction was open)', handle: released },
      { label: "a QueryRunner after a raw query('BEGIN') (not tracked by TypeORM)", handle: rawBegin },
      {
        label: 'the mysql2 connection of an open transaction (not a TypeORM handle)',
        handle: await open.connect(),
      },
      { label: 'null', handle: null },
      { label: 'a plain object', handle: { query: () => {}, isTransactionActive: true, isReleased: false } },
    ]
  }
  return {
    dataSource,
    dialect: 'mysql' as const,
    backend,
    inspect: (text: string, params?: unknown[]) => inspector.query(text, params),
    refusedHandles,
    async teardown() {
      for (const qr of runners) {
        if (qr.isReleased) continue
        if (qr.isTransactionActive) await qr.rollbackTransaction().catch(() => {})
        await qr.query('ROLLBACK').catch(() => {})
        await qr.release()
      }
      await backend.close()
      await inspector.close()
      await dataSource.destroy()
    },
  }
}

// The EntityManager of dataSource.transaction(), nested manager.transaction() as the savepoint.
runPublishConformance<EntityManager>({
  name: 'typeorm',
  label: 'typeorm (MySQL, EntityManager)',
  publish,
  publishMany,
  async setup() {
    const db = await open()
    return {
      ...db,
      transaction: (fn) => db.dataSource.transaction(fn),
      savepoint: (manager, fn) => manager.transaction(fn),
    }
  },
})

// A QueryRunner after startTransaction(); a second startTransaction() as the savepoint.
runPublishConformance<QueryRunner>({
  name: 'typeorm',
  label: 'typeorm (MySQL, QueryRunner)',
  publish,
  publishMany,
  async setup() {
    const db = await open()
    const inTransaction = async <T>(qr: QueryRunner, fn: (qr: QueryRunner) => Promise<T>) => {
      await qr.startTransaction()
      try {
        const result = await fn(qr)
        await qr.commitTransaction()
        return result
      } catch (err) {
        await qr.rollbackTransaction()
        throw err
      }
    }
    return {
      ...db,
      async transaction(fn) {
        const qr = db.dataSource.createQueryRunner()
        try {
          return await inTransaction(qr, fn)
        } finally {
          await qr.release()
        }
      },
      savepoint: inTransaction,
    }
  },
})
