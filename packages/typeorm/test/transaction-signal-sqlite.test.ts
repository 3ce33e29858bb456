import { removeSqliteFile, settle, tempSqliteFile, uniqueTableName, waitFor } from '@outboxkit/conformance'
import { createRelay, type DeliveredMessage, defineOutbox, isOutboxError, migrate } from '@outboxkit/core'
import { sqliteBackend } from '@outboxkit/sqlite'
import { publish } from '@outboxkit/typeorm'
import type Database from 'better-sqlite3'
import { DataSource } from 'typeorm'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import {
  expectLoggedAlone,
  expectRawCommitRefused,
  expectRefused,
  recordingLogger,
} from './support/signal.js'

const file = tempSqliteFile('typeorm_sqlite_signal')
const table = uniqueTableName('typeorm_sqlite_signal')
const outbox = defineOutbox({ table })
const { logged, logger } = recordingLogger()
const dataSource = new DataSource({ type: 'better-sqlite3', database: file, enableWAL: true, logger })
let db: Database.Database

const count = (topic: string) =>
  (db.prepare(`SELECT count(*) AS n FROM "${table}" WHERE topic = ?`).get(topic) as { n: number }).n

beforeAll(async () => {
  await dataSource.initialize()
  db = (dataSource.driver as unknown as { databaseConnection: Database.Database }).databaseConnection
  await migrate(outbox, sqliteBackend(db))
})
afterAll(async () => {
  await dataSource.destroy()
  removeSqliteFile(file)
})

describe('the transaction signal on better-sqlite3', () => {
  test('the row is written before publish returns (better-sqlite3 is synchronous)', async () => {
    await dataSource.transaction(async (manager) => {
      const pending = publish(outbox, manager, { topic: 'sync', payload: 1 })
      // Read on the same connection, inside the transaction, before awaiting anything.
      expect(count('sync')).toBe(1)
      expect((await pending).published).toBe(true)
    })
    expect(count('sync')).toBe(1)
  })

  test('a raw COMMIT inside dataSource.transaction() is caught by better-sqlite3, not by TypeORM flags', () =>
    expectRawCommitRefused(dataSource, outbox, { reason: 'SQLite reports autocommit', count }))

  test("a concurrent transaction's failed BEGIN rolls back the first one (one shared connection): publish sees it", async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    let refused: Error | undefined
    const first = dataSource.transaction(async (manager) => {
      await gate
      refused = await settle(publish(outbox, manager, { topic: 'shared-connection', payload: 1 }))
    })
    // TypeORM starts a second transaction on the same connection: its BEGIN fails, and the
    // ROLLBACK it then runs ends the first transaction, whose flags still say it is open.
    const second = await settle(dataSource.transaction(async () => {}))
    expect(second?.message).toContain('cannot start a transaction within a transaction')
    expect(db.inTransaction).toBe(false)
    release()
    await settle(first)
    expectRefused(refused)
    expect(count('shared-connection')).toBe(0)
  })

  test("TypeORM's logger sees the publish statement, the only one publish sends", () =>
    expectLoggedAlone(dataSource, outbox, { logged, begin: 'BEGIN TRANSACTION' }))

  test('a topic schema that validates asynchronously is refused (the write must happen before publish returns)', async () => {
    const strict = defineOutbox({
      table,
      topics: {
        slow: {
          '~standard': { version: 1, vendor: 'test', validate: async (value: unknown) => ({ value }) },
        },
      },
    })
    const err = await settle(
      dataSource.transaction(async (manager) => {
        await publish(strict, manager, { topic: 'slow', payload: 1 })
      }),
    )
    expect(isOutboxError(err, 'INVALID_CONFIG'), String(err)).toBe(true)
    expect(count('slow')).toBe(0)
  })

  test('a relay in this process is woken right after the commit (pollIntervalMs is an hour)', async () => {
    const deliveries: DeliveredMessage[] = []
    const relay = createRelay(outbox, {
      backend: sqliteBackend(db),
      pollIntervalMs: 3_600_000,
      handlers: { wake: async (m: DeliveredMessage) => void deliveries.push(m) },
    })
    await relay.start()
    try {
      const { id } = await dataSource.transaction((manager) =>
        publish(outbox, manager, { topic: 'wake', payload: 1 }),
      )
      await waitFor(() => deliveries.length === 1, { timeoutMs: 5_000, what: 'the woken delivery' })
      expect(deliveries[0]!.id).toBe(id)
      // A transaction that stays open after publish: the wake waits for its commit (a wake sent
      // before it would find the connection in a transaction, claim nothing, and leave the
      // message to the hourly poll).
      const held = await dataSource.transaction(async (manager) => {
        const result = await publish(outbox, manager, { topic: 'wake', payload: 2 })
        await new Promise((resolve) => setTimeout(resolve, 100))
        return result
      })
      await waitFor(() => deliveries.length === 2, {
        timeoutMs: 5_000,
        what: 'the delivery woken after commit',
      })
      expect(deliveries[1]!.id).toBe(held.id)
    } finally {
      await relay.stop()
    }
  })
})
