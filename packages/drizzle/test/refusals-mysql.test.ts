import {
  expectPublishRefused,
  mysqlInspector,
  testMysqlUri,
  uniqueTableName,
  useOutboxTable,
} from '@outboxkit/conformance'
import { defineOutbox, isOutboxError, migrate } from '@outboxkit/core'
import { type DrizzleMysqlTransaction, publish, publishMany } from '@outboxkit/drizzle'
import { mysqlBackend } from '@outboxkit/mysql'
import { entityKind, sql } from 'drizzle-orm'
import { type MySqlDialect, MySqlTransaction } from 'drizzle-orm/mysql-core'
import { drizzle as mysqlProxyDrizzle } from 'drizzle-orm/mysql-proxy'
import { drizzle } from 'drizzle-orm/mysql2'
import mysql from 'mysql2/promise'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createDrizzlePublisher } from '../src/publish.js'
import { publishOnKeptTxInsideAnother, publishTwoSavepointsDeep, REFUSAL_PREFIX } from './support/refusals.js'

const uri = testMysqlUri()
const inspector = mysqlInspector()
/** Every statement Drizzle's logger sees (the adapter's own statements go through it too). */
const logged: string[] = []
const logger = { logQuery: (q: string) => void logged.push(q) }
const pool = mysql.createPool({ uri, connectionLimit: 8, charset: 'utf8mb4' })
const db = drizzle({ client: pool, logger })
let single: mysql.Connection
const outbox = useOutboxTable('drizzle_mysql_refusals', {
  dialect: 'mysql',
  backend: () => mysqlBackend({ pool }),
})
const table = outbox.table.name
// MariaDB here: the exported publish takes the guard path; the probe (MySQL's path) is tested too.
const paths = [
  ['guard (MariaDB)', { publish, publishMany }],
  ['probe (MySQL)', createDrizzlePublisher('probe')],
] as const

const count = async (where = '1 = 1', params: unknown[] = []) =>
  Number((await inspector.query(`SELECT count(*) AS n FROM ${table} WHERE ${where}`, params))[0]!.n)

/**
 * Asserts publish and publishMany on `handle` fail with NOT_IN_TRANSACTION on both paths and write
 * nothing; unless `sent` (the server decided: the guarded INSERT or the probe went out), that no
 * outbox statement was sent at all.
 */
async function expectRefused(handle: unknown, mentions: RegExp, { sent = false } = {}): Promise<void> {
  const before = await count()
  logged.length = 0
  for (const [label, p] of paths) {
    await expectPublishRefused(p, outbox, handle, {
      message: [REFUSAL_PREFIX, mentions, 'Nothing was written.'],
      label,
    })
  }
  if (!sent) expect(logged.filter((q) => q.includes(table))).toEqual([])
  expect(await count()).toBe(before)
}

beforeAll(async () => {
  single = await mysql.createConnection({ uri, charset: 'utf8mb4' })
})
afterAll(async () => {
  await inspector.close()
  await single.end()
  await pool.end()
})

describe('handles that never were a transaction', () => {
  test('the root db on a Pool and on a single connection, even inside a BEGIN run by hand', async () => {
    await expectRefused(
      db,
      /the Drizzle database itself \(MySql2Database\): it runs each query in autocommit/,
    )
    await expectRefused(drizzle({ client: single }), /the Drizzle database itself \(MySql2Database\)/)
    await single.query('BEGIN')
    try {
      await expectRefused(drizzle({ client: single }), /the Drizzle database itself/)
    } finally {
      await single.query('ROLLBACK')
    }
    const compileTimeCheck = () =>
      // @ts-expect-error the root db is not a transaction
      publish(outbox, db, { topic: 'refused', payload: 1 })
    expect(typeof compileTimeCheck).toBe('function')
  })

  test('mysql2 objects and a transaction of a MySQL driver the adapter cannot check', async () => {
    await expectRefused(pool, /which is not a Drizzle transaction/)
    await expectRefused(single, /which is not a Drizzle transaction/)
    // mysql-proxy has no transactions: a transaction class of the tests' own on its session, as a
    // third-party MySQL driver (PlanetScale, TiDB serverless, ...) would have.
    const proxy = mysqlProxyDrizzle(async () => ({ rows: [] })) as unknown as {
      dialect: MySqlDialect
      session: never
    }
    class OtherDriverTransaction extends MySqlTransaction<any, any> {
      static override readonly [entityKind]: string = 'OtherDriverTransaction'
      override transaction(): Promise<never> {
        throw new Error('not supported')
      }
    }
    const tx = new OtherDriverTransaction(proxy.dialect, proxy.session, undefined, 0, 'default')
    await expectRefused(
      tx,
      /a Drizzle OtherDriverTransaction \(not a PostgreSQL transaction, nor .*drizzle-orm\/mysql2/,
    )
  })
})

describe('transactions that ended', () => {
  test('on a Pool: a tx and a nested tx kept after commit, a tx kept after rollback (released connection: nothing sent)', async () => {
    let escaped: DrizzleMysqlTransaction | undefined
    let nested: DrizzleMysqlTransaction | undefined
    await db.transaction(async (tx) => {
      escaped = tx
      await tx.transaction(async (sp) => {
        nested = sp
        await publish(outbox, sp, { topic: 'inside', payload: 1 })
      })
    })
    expect(await count(`topic = 'inside'`)).toBe(1)
    await expectRefused(escaped, /already committed or rolled back \(its pooled mysql2 connection went back/)
    await expectRefused(nested, /already committed or rolled back/)
    let rolledBack: DrizzleMysqlTransaction | undefined
    await db
      .transaction(async (tx) => {
        rolledBack = tx
        await publish(outbox, tx, { topic: 'rolled-back', payload: 1 })
        tx.rollback()
      })
      .catch(() => {})
    await expectRefused(rolledBack, /already committed or rolled back/)
    expect(await count(`topic = 'rolled-back'`)).toBe(0)
  })

  test('on a single connection (not released): the server refuses, guard and probe alike', async () => {
    const sdb = drizzle({ client: single, logger })
    let committed: DrizzleMysqlTransaction | undefined
    await sdb.transaction(async (tx) => {
      committed = tx
    })
    await expectRefused(committed, /no longer inside a transaction/, { sent: true })
    let thrown: DrizzleMysqlTransaction | undefined
    await sdb
      .transaction(async (tx) => {
        thrown = tx
        throw new Error('no')
      })
      .catch(() => {})
    await expectRefused(thrown, /no longer inside a transaction/, { sent: true })
  })

  test('a COMMIT queued before the publish (a publish not awaited): refused, nothing written', async () => {
    const sdb = drizzle({ client: single })
    for (const [label, p] of paths) {
      await sdb.transaction(async (tx) => {
        // Queued on the connection before publish's statements (Drizzle's tx.execute would only start when awaited).
        const commit = single.query('COMMIT')
        const err = await p
          .publish(outbox, tx, { topic: 'racing-commit', payload: 1 })
          .catch((e: unknown) => e)
        await commit
        expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), `${label}: ${String(err)}`).toBe(true)
      })
    }
    // Sent after the COMMIT, it would have committed on its own in autocommit.
    expect(await count(`topic = 'racing-commit'`)).toBe(0)
  })
})

describe('what is accepted', () => {
  test('savepoints two levels deep on both paths: only the rolled-back level is gone', async () => {
    for (const [label, p] of paths) {
      const ids = await publishTwoSavepointsDeep(db, p, outbox, `nested-${label}`)
      const kept = await inspector.query<{ id: string }>(`SELECT id FROM ${table} WHERE topic = ?`, [
        `nested-${label}`,
      ])
      expect(kept.map((r) => r.id).sort(), label).toEqual([ids[0], ids[1]].sort())
    }
  })

  test('ordered topics on both paths: the key is locked and numbered, seq follows publish order', async () => {
    const ordered = defineOutbox({ table, orderedTopics: ['ledger'] })
    await migrate(ordered, mysqlBackend({ pool }))
    for (const [label, p] of paths) {
      const key = `acct-${label}`
      await db.transaction((tx) => p.publish(ordered, tx, { topic: 'ledger', payload: 1, key }))
      await db.transaction((tx) =>
        p.publishMany(ordered, tx, [
          { topic: 'ledger', payload: 2, key },
          { topic: 'other', payload: 0, key },
          { topic: 'ledger', payload: 3, key },
        ]),
      )
      const rows = await inspector.query<{ payload: string; seq: number | null }>(
        `SELECT payload, seq FROM ${table} WHERE \`key\` = ? ORDER BY seq, payload`,
        [key],
      )
      expect(
        rows.map((r) => [Number(r.payload), r.seq === null ? null : Number(r.seq)]),
        label,
      ).toEqual([
        [0, null],
        [1, 1],
        [2, 2],
        [3, 3],
      ])
    }
  })

  test('the statements go through Drizzle’s query path: its logger sees the INSERT', async () => {
    logged.length = 0
    await db.transaction((tx) => publish(outbox, tx, { topic: 'logged', payload: 1 }))
    expect(logged.filter((q) => q.startsWith(`INSERT INTO \`${table}\``))).toHaveLength(1)
  })

  test('a session with autocommit = 0 is inside a transaction: accepted', async () => {
    const sdb = drizzle({ client: single })
    await sdb.transaction(async (tx) => {
      await tx.execute(sql`SET autocommit = 0`)
      try {
        await publish(outbox, tx, { topic: 'autocommit-0', payload: 1 })
      } finally {
        await tx.execute(sql`COMMIT`)
        await tx.execute(sql`SET autocommit = 1`)
      }
    })
    expect(await count(`topic = 'autocommit-0'`)).toBe(1)
  })
})

describe('errors', () => {
  test('a lock wait timeout is TIMEOUT, and a missing table DATABASE without the payload in the message', async () => {
    const holder = await mysql.createConnection({ uri })
    try {
      await holder.query('BEGIN')
      await holder.query(
        `INSERT INTO ${table} (id, topic, payload, dedup_key) VALUES (UUID(), 'holder', '1', 'held')`,
      )
      const err = await db
        .transaction(async (tx) => {
          await tx.execute(sql`SET SESSION innodb_lock_wait_timeout = 1`)
          await publish(outbox, tx, { topic: 'waiter', payload: 1, dedupKey: 'held' })
        })
        .catch((e: unknown) => e)
      expect(isOutboxError(err, 'TIMEOUT'), String(err)).toBe(true)
      expect((err as Error).message).toMatch(/^\[outboxkit\] \[drizzle\] publish to .* timed out/)
    } finally {
      await holder.query('ROLLBACK')
      await holder.end()
    }
    const secret = 'payload-that-must-not-be-in-messages'
    const missing = defineOutbox({ table: uniqueTableName('drizzle_missing') })
    const err = await db
      .transaction((tx) => publish(missing, tx, { topic: 't', payload: { secret } }))
      .catch((e: unknown) => e)
    expect(isOutboxError(err, 'DATABASE'), String(err)).toBe(true)
    expect((err as Error).message).toMatch(
      /^\[outboxkit\] \[drizzle\] publish to ok_drizzle_missing_\S+ failed: /,
    )
    expect((err as Error).message).not.toContain(secret)
    expect((err as Error).message).not.toContain('Failed query')
    expect((err as { cause?: { code?: string } }).cause?.code).toBe('ER_NO_SUCH_TABLE')
  })
})

describe('documented limits', () => {
  test('a kept tx whose pooled connection now serves another transaction writes into that one', async () => {
    const onePool = mysql.createPool({ uri, connectionLimit: 1 })
    try {
      // The only connection is then inside B: the kept handle A finds it checked out and in a transaction.
      await publishOnKeptTxInsideAnother(drizzle({ client: onePool }), (kept) =>
        publish(outbox, kept, { topic: 'joined-other', payload: 1 }),
      )
    } finally {
      await onePool.end()
    }
    expect(await count(`topic = 'joined-other'`)).toBe(0)
  })
})
