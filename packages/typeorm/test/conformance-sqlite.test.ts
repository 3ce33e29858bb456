import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  type RefusedHandle,
  runPublishConformance,
  sqliteInspector,
  uniqueTableName,
} from '@outboxkit/conformance'
import type { OutboxBackend } from '@outboxkit/core'
import { sqliteBackend } from '@outboxkit/sqlite'
import { publish, publishMany } from '@outboxkit/typeorm'
import type Database from 'better-sqlite3'
import { DataSource, type EntityManager, type QueryRunner } from 'typeorm'

/**
 * A better-sqlite3 DataSource on a file of its own. TypeORM's SQLite drivers run every
 * QueryRunner on the DataSource's one connection and do not queue transactions (a second BEGIN
 * fails and its ROLLBACK ends the first), so the application runs one transaction at a time:
 * `serial` does that here.
 */
async function open(prefix: string, backendOn: 'the same connection' | 'a connection of its own') {
  const file = join(tmpdir(), `${uniqueTableName(prefix)}.db`)
  const dataSource = new DataSource({
    type: 'better-sqlite3',
    database: file,
    enableWAL: true,
    timeout: 10_000,
  })
  await dataSource.initialize()
  const connection = (dataSource.driver as unknown as { databaseConnection: Database.Database })
    .databaseConnection
  const inspector = sqliteInspector(file)
  const backend: OutboxBackend =
    backendOn === 'the same connection'
      ? sqliteBackend(connection)
      : sqliteBackend({ filename: file, busyTimeoutMs: 10_000 })
  let queue: Promise<unknown> = Promise.resolve()
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn, fn)
    queue = run.catch(() => {})
    return run
  }
  const runners: QueryRunner[] = []
  async function refusedHandles(): Promise<RefusedHandle[]> {
    const runner = () => {
      const qr = dataSource.createQueryRunner()
      runners.push(qr)
      return qr
    }
    const neverStarted = runner()
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
      { label: 'a QueryRunner without a transaction', handle: neverStarted },
      { label: 'a QueryRunner committed but not released', handle: committed },
      { label: 'the manager of a QueryRunner committed but not released', handle: committed.manager },
      { label: 'a QueryRunner rolled back but not released', handle: rolledBack },
      { label: "the DataSource's better-sqlite3 Database (not a TypeORM handle)", handle: connection },
      { label: 'null', handle: null },
    ]
  }
  return {
    dataSource,
    serial,
    dialect: 'sqlite' as const,
    backend,
    inspect: (text: string, params?: unknown[]) => inspector.query(text, params),
    refusedHandles,
    async teardown() {
      for (const qr of runners) await qr.release()
      await backend.close()
      await inspector.close()
      await dataSource.destroy()
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
    },
  }
}

// The EntityManager of dataSource.transaction(), nested manager.transaction() as the savepoint;
// the relay shares the DataSource's connection.
runPublishConformance<EntityManager>({
  name: 'typeorm',
  label: 'typeorm (better-sqlite3, EntityManager)',
  publish,
  publishMany,
  async setup() {
    const db = await open('typeorm_sqlite', 'the same connection')
    return {
      ...db,
      transaction: (fn) => db.serial(() => db.dataSource.transaction(fn)),
      savepoint: (manager, fn) => manager.transaction(fn),
    }
  },
})

// A QueryRunner after startTransaction(); a second startTransaction() as the savepoint; the relay
// on a connection of its own to the file.
runPublishConformance<QueryRunner>({
  name: 'typeorm',
  label: 'typeorm (better-sqlite3, QueryRunner)',
  publish,
  publishMany,
  async setup() {
    const db = await open('typeorm_sqlite_qr', 'a connection of its own')
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
      transaction: (fn) =>
        db.serial(async () => {
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
