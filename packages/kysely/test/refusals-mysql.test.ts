import {
  expectOutboxError,
  expectUnawaitedPublishContained,
  mysqlInspector,
  settle,
  testMysqlUri,
  uniqueTableName,
  useOutboxTable,
} from '@outboxkit/conformance'
import { isOutboxError } from '@outboxkit/core'
import { publish, publishMany } from '@outboxkit/kysely'
import { mysqlBackend } from '@outboxkit/mysql'
import {
  CamelCasePlugin,
  type ControlledTransaction,
  Kysely,
  MysqlDialect,
  sql,
  type Transaction,
} from 'kysely'
import { createPool, type PoolOptions } from 'mysql2'
import { afterAll, describe, expect, test } from 'vitest'
import { expectPluginsIgnored, expectRacingCommitRefused, REFUSAL_PREFIX } from './support/refusals.js'

// Kysely on MariaDB through mysql2, as an application sets it up.
const inspector = mysqlInspector()
const kysely = (options: PoolOptions = {}) =>
  new Kysely<any>({
    dialect: new MysqlDialect({ pool: createPool({ uri: testMysqlUri(), connectionLimit: 10, ...options }) }),
  })
const db = kysely()
const outbox = useOutboxTable('kysely_mysql_refusals', {
  dialect: 'mysql',
  backend: () => mysqlBackend({ uri: testMysqlUri(), connectionLimit: 2 }),
  closeBackend: true,
})
const table = outbox.table.name

const count = async (topic: string) =>
  Number((await inspector.query(`SELECT COUNT(*) AS n FROM \`${table}\` WHERE topic = ?`, [topic]))[0]!.n)

function expectRefused(err: unknown, mentions?: RegExp): void {
  expectOutboxError(err, 'NOT_IN_TRANSACTION', {
    message: [REFUSAL_PREFIX, 'Nothing was written.', ...(mentions ? [mentions] : [])],
  })
}

/** Statements the server counted on the session so far (`Questions` counts the SHOW too). */
const questions = async (trx: Transaction<any>) =>
  Number(
    (await sql<{ Value: string }>`SHOW SESSION STATUS WHERE Variable_name = 'Questions'`.execute(trx))
      .rows[0]!.Value,
  )

afterAll(async () => {
  await inspector.close()
  await db.destroy()
})

describe("Kysely's own state, as on PostgreSQL", () => {
  test('the root db, a db.connection() handle even after a manual BEGIN, escaped transactions', async () => {
    expectRefused(
      await settle(publish(outbox, db as never, { topic: 'state', payload: 1 })),
      /not a transaction/,
    )
    await db.connection().execute(async (conn) => {
      await sql`begin`.execute(conn)
      expectRefused(await settle(publish(outbox, conn as never, { topic: 'state', payload: 1 })))
      await sql`rollback`.execute(conn)
    })
    let escaped: Transaction<any> | undefined
    await db.transaction().execute(async (trx) => {
      escaped = trx
      await publish(outbox, trx, { topic: 'state-inside', payload: 1 })
    })
    expectRefused(
      await settle(publish(outbox, escaped!, { topic: 'state', payload: 1 })),
      /already committed/,
    )
    const ctl = await db.startTransaction().execute()
    await ctl.rollback().execute()
    expectRefused(
      await settle(publishMany(outbox, ctl, [{ topic: 'state', payload: 1 }])),
      /already rolled back/,
    )
    expect(await count('state')).toBe(0)
    expect(await count('state-inside')).toBe(1)
  })

  test('a ControlledTransaction whose commit() runs while publish is on its way', () =>
    expectRacingCommitRefused(db, outbox, { expectRefused: (err) => expectRefused(err), count }))
})

describe('MariaDB says the connection left its transaction: the guarded INSERT writes nothing', () => {
  test('a raw COMMIT inside the transaction', async () => {
    await db.transaction().execute(async (trx) => {
      await sql`commit`.execute(trx)
      const err = await settle(publish(outbox, trx, { topic: 'raw-commit', payload: 1 }))
      expectRefused(err, /MariaDB reports autocommit/)
    })
    expect(await count('raw-commit')).toBe(0)
  })

  test('DDL, which commits implicitly', async () => {
    const other = uniqueTableName('kysely_ddl')
    try {
      await db.transaction().execute(async (trx) => {
        await publish(outbox, trx, { topic: 'before-ddl', payload: 1 })
        await sql`CREATE TABLE ${sql.id(other)} (id INT)`.execute(trx)
        expectRefused(
          await settle(publishMany(outbox, trx, [{ topic: 'after-ddl', payload: 1 }])),
          /MariaDB reports autocommit/,
        )
      })
    } finally {
      await inspector.query(`DROP TABLE IF EXISTS \`${other}\``)
    }
    // The DDL committed the first message (MySQL's rule); the one after it was refused.
    expect(await count('before-ddl')).toBe(1)
    expect(await count('after-ddl')).toBe(0)
  })

  test('a deadlock victim, whose transaction the server rolled back', async () => {
    const locks = uniqueTableName('kysely_locks')
    await inspector.query(`CREATE TABLE \`${locks}\` (id INT PRIMARY KEY)`)
    await inspector.query(`INSERT INTO \`${locks}\` VALUES (1), (2)`)
    try {
      const a = await db.startTransaction().execute()
      const b = await db.startTransaction().execute()
      const lock = (trx: ControlledTransaction<any>, id: number) =>
        sql`SELECT id FROM ${sql.id(locks)} WHERE id = ${id} FOR UPDATE`.execute(trx)
      await lock(a, 1)
      await lock(b, 2)
      const results = await Promise.all([settle(lock(a, 2)), settle(lock(b, 1))])
      const victim = results[0] ? a : b
      expect((results[0] ?? results[1]) as { errno?: number }).toMatchObject({ errno: 1213 })
      // Kysely still holds the transaction open; the server does not.
      expect(victim.isCommitted || victim.isRolledBack).toBe(false)
      expectRefused(
        await settle(publish(outbox, victim, { topic: 'deadlock', payload: 1 })),
        /MariaDB reports autocommit/,
      )
      await a.rollback().execute()
      await b.rollback().execute()
    } finally {
      await inspector.query(`DROP TABLE IF EXISTS \`${locks}\``)
    }
    expect(await count('deadlock')).toBe(0)
  })

  test('a publish not awaited before the callback returns never outlives the transaction', () =>
    expectUnawaitedPublishContained<Transaction<any>>({
      transaction: (fn) => db.transaction().execute(fn),
      publish: (trx, topic) => publish(outbox, trx, { topic, payload: 1 }),
      topic: 'not-awaited',
      count,
      expectRefused: (err) => expectRefused(err),
    }))
})

describe('what is accepted', () => {
  test('plugins on the transaction do not change what publish reads or writes', () =>
    expectPluginsIgnored(db.withPlugin(new CamelCasePlugin()), outbox, {
      dedupKey: 'p-1',
      payloadOf: async (id) => {
        const [row] = await inspector.query(
          `SELECT CAST(payload AS CHAR) AS payload FROM \`${table}\` WHERE id = ?`,
          [id],
        )
        return JSON.parse(String(row!.payload))
      },
    }))

  test('one INSERT per publish without dedupKey (the server flavour is read once per Kysely instance)', async () => {
    await db.transaction().execute(async (trx) => {
      const before = await questions(trx)
      await publishMany(outbox, trx, [
        { topic: 'round-trip', payload: 1 },
        { topic: 'round-trip', payload: 2 },
      ])
      expect((await questions(trx)) - before - 1).toBe(1)
    })
    expect(await count('round-trip')).toBe(2)
  })

  test('a dedupKey already taken, with FOUND_ROWS off: the guard is read again, and the publish is a no-op', async () => {
    const noFoundRows = kysely({ flags: ['-FOUND_ROWS'] })
    try {
      const first = await noFoundRows
        .transaction()
        .execute((trx) => publish(outbox, trx, { topic: 'dedup', payload: 1, dedupKey: 'found-rows' }))
      const again = await noFoundRows.transaction().execute(async (trx) => {
        const before = await questions(trx)
        const result = await publish(outbox, trx, { topic: 'dedup', payload: 2, dedupKey: 'found-rows' })
        // INSERT (no row affected), the guard alone, the dedup SELECT.
        expect((await questions(trx)) - before - 1).toBe(3)
        return result
      })
      expect(again).toEqual({ id: first.id, published: false })
      // The same no-op with the transaction gone is refused.
      await noFoundRows.transaction().execute(async (trx) => {
        await sql`commit`.execute(trx)
        expectRefused(
          await settle(publish(outbox, trx, { topic: 'dedup', payload: 3, dedupKey: 'found-rows' })),
        )
      })
    } finally {
      await noFoundRows.destroy()
    }
    expect(await count('dedup')).toBe(1)
  })

  test('a session with autocommit = 0 is inside a transaction and is accepted', async () => {
    await db.transaction().execute(async (trx) => {
      await sql`SET autocommit = 0`.execute(trx)
      try {
        await publish(outbox, trx, { topic: 'autocommit-0', payload: 1 })
      } finally {
        await sql`SET autocommit = 1`.execute(trx)
      }
    })
    // SET autocommit = 1 commits the implicit transaction it ends.
    expect(await count('autocommit-0')).toBe(1)
  })
})

describe('errors from the database', () => {
  test('a lock wait timeout surfaces as OutboxError TIMEOUT', async () => {
    const holder = await db.startTransaction().execute()
    await publish(outbox, holder, { topic: 'timeout', payload: 'holder', dedupKey: 'timeout-1' })
    try {
      const err = await settle(
        db.transaction().execute(async (trx) => {
          await sql`SET SESSION innodb_lock_wait_timeout = 1`.execute(trx)
          try {
            await publish(outbox, trx, { topic: 'timeout', payload: 'waiter', dedupKey: 'timeout-1' })
          } finally {
            await sql`SET SESSION innodb_lock_wait_timeout = DEFAULT`.execute(trx)
          }
        }),
      )
      expect(isOutboxError(err, 'TIMEOUT'), String(err)).toBe(true)
      expect(err!.message).toMatch(/^\[outboxkit\] \[kysely\] publish to .* timed out/)
    } finally {
      await holder.rollback().execute()
    }
    expect(await count('timeout')).toBe(0)
  })
})
