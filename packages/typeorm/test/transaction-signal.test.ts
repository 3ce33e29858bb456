import {
  expectUnawaitedPublishContained,
  serverInspector,
  settle,
  testDatabaseUrl,
  useOutboxTable,
} from '@outboxkit/conformance'
import { pgBackend } from '@outboxkit/pg'
import { createOutboxEntity, publish, publishMany } from '@outboxkit/typeorm'
import pg from 'pg'
import { DataSource, type EntityManager } from 'typeorm'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import {
  expectHeldRowTimeout,
  expectLoggedAlone,
  expectRawCommitRefused,
  expectRefused,
  recordingLogger,
} from './support/signal.js'

const inspector = serverInspector()
const outbox = useOutboxTable('typeorm_signal', {
  backend: () => pgBackend({ connectionString: testDatabaseUrl() }),
  closeBackend: true,
})
const table = outbox.table.name
const OutboxMessage = createOutboxEntity(outbox)
const { logged, logger } = recordingLogger()
const dataSource = new DataSource({
  type: 'postgres',
  url: testDatabaseUrl(),
  entities: [OutboxMessage],
  logger,
})

const count = async (topic: string) =>
  Number((await inspector.query(`SELECT count(*)::int AS n FROM ${table} WHERE topic = $1`, [topic]))[0]!.n)

beforeAll(() => dataSource.initialize())
afterAll(async () => {
  await inspector.close()
  await dataSource.destroy()
})

describe('the transaction signal', () => {
  test('a QueryRunner committed but not released runs queries in autocommit, and publish refuses it', async () => {
    const qr = dataSource.createQueryRunner()
    try {
      await qr.startTransaction()
      await qr.commitTransaction()
      expect(qr.isReleased).toBe(false)
      expect(qr.isTransactionActive).toBe(false)
      const err = await settle(publish(outbox, qr, { topic: 'after-commit', payload: 1 }))
      expectRefused(err)
      expect(err!.message).toContain('a QueryRunner that has no open transaction')
      expectRefused(await settle(publish(outbox, qr.manager, { topic: 'after-commit', payload: 1 })))
      expect(await count('after-commit')).toBe(0)
      // Why the flag check matters: TypeORM itself still runs a write on this runner, committed alone.
      await qr.query(
        `INSERT INTO ${table} (id, topic, payload) VALUES (gen_random_uuid(), 'after-commit', '1')`,
      )
      expect(await count('after-commit')).toBe(1)
    } finally {
      await qr.release()
    }
  })

  test('a raw BEGIN is refused (TypeORM does not track it) although PostgreSQL is in a transaction', async () => {
    const qr = dataSource.createQueryRunner()
    try {
      await qr.query('BEGIN')
      expect(((await qr.connect()) as pg.PoolClient).getTransactionStatus()).toBe('T')
      expectRefused(await settle(publish(outbox, qr, { topic: 'raw-begin', payload: 1 })))
      await qr.query('COMMIT')
      expect(await count('raw-begin')).toBe(0)
    } finally {
      await qr.release()
    }
  })

  test('a raw COMMIT inside dataSource.transaction() is caught by pg status, not by TypeORM flags', () =>
    expectRawCommitRefused(dataSource, outbox, { reason: 'PostgreSQL reports it idle', count }))

  test('a failed transaction is refused before anything is sent', async () => {
    const err = await settle(
      dataSource.transaction(async (manager) => {
        await manager.query('SELECT 1/0').catch(() => {})
        await publish(outbox, manager, { topic: 'failed', payload: 1 })
      }),
    )
    expectRefused(err)
    expect(err!.message).toContain('transaction failed')
  })

  test('a publish queued behind a COMMIT is refused at the moment pg would send it, and writes nothing', async () => {
    const qr = dataSource.createQueryRunner()
    try {
      await qr.startTransaction()
      const client = (await qr.connect()) as pg.PoolClient
      // Queued first, answered only after I/O: publish's own checks still see TypeORM's flags set
      // and status 'T', so only the check at send time can see that the COMMIT ran before it.
      const commit = client.query('COMMIT')
      const err = await settle(publish(outbox, qr, { topic: 'behind-commit', payload: 1 }))
      await commit
      expectRefused(err)
      expect(err!.message).toContain('PostgreSQL reports it idle')
      expect(await count('behind-commit')).toBe(0)
      await qr.rollbackTransaction() // TypeORM still thinks its transaction is open
    } finally {
      await qr.release()
    }
  })

  test('a publish not awaited before the transaction ends never outlives it', () =>
    expectUnawaitedPublishContained<EntityManager>({
      transaction: (fn) => dataSource.transaction(fn),
      publish: (manager, topic, rollingBack) =>
        rollingBack
          ? publishMany(outbox, manager, [{ topic, payload: 1 }])
          : publish(outbox, manager, { topic, payload: 1 }),
      topic: 'not-awaited',
      count,
      expectRefused: (err) => expectRefused(err),
    }))

  test("the server's statement_timeout fails the publish with TIMEOUT", () =>
    expectHeldRowTimeout(dataSource, outbox, {
      withTimeout: async (manager, publishHeld) => {
        await manager.query(`SET LOCAL statement_timeout = '200ms'`)
        await publishHeld()
      },
      count,
    }))

  test('a Repository is refused with a hint to pass its manager', async () => {
    await dataSource.transaction(async (manager) => {
      const err = await settle(
        publish(outbox, manager.getRepository(OutboxMessage) as never, { topic: 'repo', payload: 1 }),
      )
      expectRefused(err)
      expect(err!.message).toContain('Repository')
      expect(err!.message).toContain('pass the transaction manager itself')
    })
    expect(await count('repo')).toBe(0)
  })

  test("TypeORM's logger sees the publish statement, the only one publish sends", () =>
    expectLoggedAlone(dataSource, outbox, { logged, begin: 'START TRANSACTION' }))

  test('a nested manager.transaction() is a savepoint: the inner rollback removes only its message', async () => {
    const ids = await dataSource.transaction(async (manager) => {
      const outer = await publish(outbox, manager, { topic: 'nested', payload: 'outer' })
      let inner = ''
      await settle(
        manager.transaction(async (nested) => {
          expect(nested.queryRunner).toBe(manager.queryRunner)
          inner = (await publish(outbox, nested, { topic: 'nested', payload: 'inner' })).id
          throw new Error('inner')
        }),
      )
      const after = await publish(outbox, manager, { topic: 'nested', payload: 'after' })
      return [outer.id, inner, after.id]
    })
    const rows = await inspector.query<{ id: string }>(
      `SELECT id::text AS id FROM ${table} WHERE topic = 'nested' ORDER BY id`,
    )
    expect(rows.map((r) => r.id)).toEqual([ids[0], ids[2]])
  })
})

describe('drivers', () => {
  test('a DataSource of another driver is refused with INVALID_CONFIG, whatever its state', async () => {
    // CockroachDB has a TypeORM driver of its own (on pg): not PostgreSQL for outboxkit.
    const cockroach = new DataSource({ type: 'cockroachdb', timeTravelQueries: false })
    for (const handle of [
      cockroach.manager,
      cockroach.createQueryRunner(),
      cockroach.createQueryRunner().manager,
    ]) {
      const err = await settle(publish(outbox, handle, { topic: 'cockroachdb', payload: 1 }))
      expectRefused(err, 'INVALID_CONFIG')
      expect(err!.message).toContain(`'postgres', 'mysql', 'mariadb' and 'better-sqlite3' drivers`)
      expect(err!.message).toContain('"cockroachdb"')
    }
  })

  test('with a pg client that cannot report its transaction status, TypeORM flags alone decide', async () => {
    class StatuslessClient extends pg.Client {
      constructor(config?: string | pg.ClientConfig) {
        super(config)
        Object.defineProperty(this, 'getTransactionStatus', { value: undefined })
      }
    }
    class StatuslessPool extends pg.Pool {
      constructor(config?: pg.PoolConfig) {
        super({ ...config, Client: StatuslessClient })
      }
    }
    const legacy = new DataSource({
      type: 'postgres',
      url: testDatabaseUrl(),
      driver: { ...pg, Pool: StatuslessPool },
    })
    await legacy.initialize()
    try {
      const { id } = await legacy.transaction(async (manager) => {
        expect(
          ((await manager.queryRunner!.connect()) as { getTransactionStatus?: unknown }).getTransactionStatus,
        ).toBeUndefined()
        return publish(outbox, manager, { topic: 'statusless', payload: { ok: true } })
      })
      await settle(
        legacy.transaction(async (manager) => {
          await publish(outbox, manager, { topic: 'statusless', payload: 'rolled back' })
          throw new Error('roll back')
        }),
      )
      const rows = await inspector.query<{ id: string }>(
        `SELECT id::text AS id FROM ${table} WHERE topic = 'statusless'`,
      )
      expect(rows.map((r) => r.id)).toEqual([id])
      // A failed transaction is only seen when PostgreSQL answers 25P02; it is still NOT_IN_TRANSACTION.
      const err = await settle(
        legacy.transaction(async (manager) => {
          await manager.query('SELECT 1/0').catch(() => {})
          await publish(outbox, manager, { topic: 'statusless', payload: 'failed' })
        }),
      )
      expectRefused(err)
      expect(err!.message).toContain('transaction failed')
      const qr = legacy.createQueryRunner()
      await qr.startTransaction()
      await qr.commitTransaction()
      expectRefused(await settle(publish(outbox, qr, { topic: 'statusless', payload: 'escaped' })))
      await qr.release()
      expect(await count('statusless')).toBe(1)
    } finally {
      await legacy.destroy()
    }
  })
})
