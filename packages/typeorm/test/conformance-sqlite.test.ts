import { removeSqliteFile, serialQueue, sqliteInspector, tempSqliteFile } from '@outboxkit/conformance'
import { sqliteBackend } from '@outboxkit/sqlite'
import type Database from 'better-sqlite3'
import { DataSource } from 'typeorm'
import { endedHandles, queryRunners, runTypeormConformance } from './support/conformance.js'

/**
 * A better-sqlite3 DataSource on a file of its own. TypeORM's SQLite drivers run every
 * QueryRunner on the DataSource's one connection and do not queue transactions (a second BEGIN
 * fails and its ROLLBACK ends the first), so the application runs one transaction at a time:
 * `serial` does that here. The EntityManager run's relay shares the DataSource's connection; the
 * QueryRunner run's relay has a connection of its own to the file.
 */
runTypeormConformance('better-sqlite3', async (style) => {
  const file = tempSqliteFile(style === 'EntityManager' ? 'typeorm_sqlite' : 'typeorm_sqlite_qr')
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
  const backend =
    style === 'EntityManager'
      ? sqliteBackend(connection)
      : sqliteBackend({ filename: file, busyTimeoutMs: 10_000 })
  const { runner, releaseAll } = queryRunners(dataSource)
  return {
    dataSource,
    serial: serialQueue(),
    dialect: 'sqlite',
    backend,
    inspect: (text, params) => inspector.query(text, params),
    refusedHandles: async () => [
      ...(await endedHandles(dataSource, runner)),
      { label: 'a QueryRunner without a transaction', handle: runner() },
      { label: "the DataSource's better-sqlite3 Database (not a TypeORM handle)", handle: connection },
    ],
    async teardown() {
      await releaseAll()
      await backend.close()
      await inspector.close()
      await dataSource.destroy()
      removeSqliteFile(file)
    },
  }
})
