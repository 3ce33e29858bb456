import {
  expectUnawaitedPublishContained,
  mysqlInspector,
  settle,
  testMysqlUri,
  uniqueTableName,
  useOutboxTable,
} from '@outboxkit/conformance'
import { mysqlBackend } from '@outboxkit/mysql'
import { publish, publishMany } from '@outboxkit/typeorm'
import * as mysql2 from 'mysql2'
import { DataSource, type EntityManager, type Logger, type QueryRunner } from 'typeorm'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import {
  expectHeldRowTimeout,
  expectRawCommitRefused,
  recordingLogger,
  expectRefused as refused,
} from './support/signal.js'

const inspector = mysqlInspector()
const outbox = useOutboxTable('typeorm_mysql_signal', {
  dialect: 'mysql',
  backend: () => mysqlBackend({ uri: testMysqlUri(), connectionLimit: 2 }),
  closeBackend: true,
})
const table = outbox.table.name

const count = async (topic: string) =>
  Number(
    (
      await inspector.query<{ n: number }>(`SELECT COUNT(*) AS n FROM \`${table}\` WHERE topic = ?`, [topic])
    )[0]!.n,
  )

/** A refusal of the TypeORM adapter; on MySQL a NOT_IN_TRANSACTION also says nothing was written. */
const expectRefused = (err: unknown, code = 'NOT_IN_TRANSACTION') =>
  refused(err, code, code === 'NOT_IN_TRANSACTION' ? ['Nothing was written.'] : [])

/** The mysql2 connection TypeORM holds for a runner (internal fields patched below). */
type Connection = Record<string, unknown> & { query(sql: string, cb: (err: Error | null) => void): void }

/**
 * How publish checks the transaction depends on what the runner's connection offers. The server
 * here is MariaDB; the other two checks are reached by changing what the connection says:
 * - 'guard': MariaDB, the INSERT carries `@@in_transaction = 1 OR @@autocommit = 0`;
 * - 'probe': a server that does not say it is MariaDB (MySQL): `DO 0` right before the INSERT;
 * - 'no command queue': a driver module without mysql2's command API: through queryRunner.query().
 */
const modes = {
  guard: (_conn: Connection) => {},
  probe: (conn: Connection) => {
    conn._isMariaDB = false
    conn._handshakePacket = { ...(conn._handshakePacket as object), serverVersion: '8.0.36' }
  },
  'no command queue': (conn: Connection) => {
    Object.defineProperty(conn, 'constructor', { value: Object, configurable: true })
  },
} as const

async function dataSourceFor(mode: keyof typeof modes, logger?: Logger): Promise<DataSource> {
  const driver = {
    ...mysql2,
    createPool(options: mysql2.PoolOptions) {
      const pool = mysql2.createPool(options)
      pool.on('connection', (conn) => modes[mode](conn as unknown as Connection))
      return pool
    },
  }
  const dataSource = new DataSource({
    type: 'mysql',
    url: testMysqlUri(),
    driver,
    ...(logger ? { logger } : {}),
  })
  return dataSource.initialize()
}

/** Statements the server counted on the runner's session so far (`Questions` counts the SHOW too). */
const questions = async (qr: QueryRunner) =>
  Number((await qr.query(`SHOW SESSION STATUS WHERE Variable_name = 'Questions'`))[0].Value)

afterAll(() => inspector.close())

describe.each(Object.keys(modes) as (keyof typeof modes)[])('the transaction check: %s', (mode) => {
  const { logged, logger } = recordingLogger()
  let dataSource: DataSource
  beforeAll(async () => {
    dataSource = await dataSourceFor(mode, logger)
  })
  afterAll(() => dataSource.destroy())

  test('a raw COMMIT inside dataSource.transaction() is caught by the server, not by TypeORM flags', () =>
    expectRawCommitRefused(dataSource, outbox, {
      topic: `raw-commit-${mode}`,
      reason: ['the server reports autocommit', 'Nothing was written.'],
      count,
    }))

  test('a publish queued behind a COMMIT is refused when its turn comes, and writes nothing', async () => {
    const topic = `behind-commit-${mode}`
    const qr = dataSource.createQueryRunner()
    try {
      await qr.startTransaction()
      const conn = (await qr.connect()) as Connection
      // Queued first on mysql2's connection: publish's own checks still see TypeORM's flags set.
      const commit = new Promise<void>((resolve, reject) =>
        conn.query('COMMIT', (e) => (e ? reject(e) : resolve())),
      )
      const err = await settle(publish(outbox, qr, { topic, payload: 1 }))
      await commit
      expectRefused(err)
      expect(err!.message).toContain('the server reports autocommit')
      await qr.rollbackTransaction() // TypeORM still thinks its transaction is open
    } finally {
      await qr.release()
    }
    expect(await count(topic)).toBe(0)
  })

  test('a deadlock victim, whose transaction the server rolled back, is refused', async () => {
    const topic = `deadlock-${mode}`
    const locks = uniqueTableName('typeorm_locks')
    await inspector.query(`CREATE TABLE \`${locks}\` (id INT PRIMARY KEY)`)
    await inspector.query(`INSERT INTO \`${locks}\` VALUES (1), (2)`)
    const a = dataSource.createQueryRunner()
    const b = dataSource.createQueryRunner()
    try {
      await a.startTransaction()
      await b.startTransaction()
      const lock = (qr: QueryRunner, id: number) =>
        qr.query(`SELECT id FROM \`${locks}\` WHERE id = ? FOR UPDATE`, [id])
      await lock(a, 1)
      await lock(b, 2)
      const results = await Promise.all([settle(lock(a, 2)), settle(lock(b, 1))])
      const victim = results[0] ? a : b
      expect((results[0] ?? results[1]) as { errno?: number }).toMatchObject({ errno: 1213 })
      expect(victim.isTransactionActive).toBe(true)
      const err = await settle(publishMany(outbox, victim, [{ topic, payload: 1 }]))
      expectRefused(err)
      expect(err!.message).toContain('the server reports autocommit')
    } finally {
      for (const qr of [a, b]) {
        if (qr.isTransactionActive) await qr.rollbackTransaction()
        await qr.release()
      }
      await inspector.query(`DROP TABLE IF EXISTS \`${locks}\``)
    }
    expect(await count(topic)).toBe(0)
  })

  // Without mysql2's command queue the probe and the INSERT are two calls, and a COMMIT or
  // ROLLBACK can be queued between them: the documented gap of that path (docs/adapters/typeorm.md).
  test.skipIf(mode === 'no command queue')(
    'a publish not awaited before the transaction ends never outlives it',
    () =>
      expectUnawaitedPublishContained<EntityManager>({
        transaction: (fn) => dataSource.transaction(fn),
        publish: (manager, topic) => publish(outbox, manager, { topic, payload: 1 }),
        topic: `not-awaited-${mode}`,
        count,
        expectRefused: (err) => expectRefused(err),
      }),
  )

  test("round trips, and what TypeORM's logger sees", async () => {
    const topic = `cost-${mode}`
    const qr = dataSource.createQueryRunner()
    try {
      await qr.startTransaction()
      const before = await questions(qr)
      logged.length = 0
      await publish(outbox, qr, { topic, payload: 1 })
      const statements = (await questions(qr)) - before - 1
      await qr.commitTransaction()
      // guard: the INSERT alone; probe: DO 0 then the INSERT; without the command queue, the same two.
      expect(statements).toBe(mode === 'guard' ? 1 : 2)
      expect(logged.filter((q) => q.includes('INSERT INTO'))).toHaveLength(1)
      expect(logged.filter((q) => q === 'DO 0')).toHaveLength(mode === 'no command queue' ? 1 : 0)
    } finally {
      await qr.release()
    }
    expect(await count(topic)).toBe(1)
  })
})

test('a lock wait timeout surfaces as OutboxError TIMEOUT, and the transaction rolls back', async () => {
  const dataSource = await dataSourceFor('guard')
  try {
    await expectHeldRowTimeout(dataSource, outbox, {
      withTimeout: async (manager, publishHeld) => {
        await manager.query('SET SESSION innodb_lock_wait_timeout = 1')
        try {
          await publishHeld()
        } finally {
          await manager.query('SET SESSION innodb_lock_wait_timeout = DEFAULT')
        }
      },
      count,
    })
  } finally {
    await dataSource.destroy()
  }
})
