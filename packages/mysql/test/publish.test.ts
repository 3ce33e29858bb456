import { testMysqlUri, waitFor } from '@outboxkit/conformance'
import { defineOutbox, migrate, type Outbox } from '@outboxkit/core'
import { MYSQL_MAX_ROWS_PER_INSERT } from '@outboxkit/core/adapter'
import { mysqlBackend } from '@outboxkit/mysql'
import mysql from 'mysql2'
import mysqlPromise from 'mysql2/promise'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createMysql2Publisher, type TransactionCheck } from '../src/publish.js'
import { expectOutboxError, MysqlFixture, roundTrips } from './support.js'

const f = new MysqlFixture()
afterAll(() => f.close())

/**
 * Waits until `conn`'s transaction is waiting for a row lock. InnoDB refreshes its
 * information_schema.innodb_trx cache only after 100 ms without a read, so poll slower than that.
 */
async function waitForLockWait(conn: mysqlPromise.PoolConnection, what: string) {
  const threadId = (conn as unknown as { connection: { threadId: number } }).connection.threadId
  await waitFor(
    async () =>
      (
        await f.query(
          `SELECT 1 FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT' AND trx_mysql_thread_id = ?`,
          [threadId],
        )
      ).length > 0,
    { what, intervalMs: 150 },
  )
}

// 'auto' is what @outboxkit/mysql exports ('guard' on this MariaDB server); 'probe' is the path a
// MySQL server takes, run here on MariaDB, which sends the same status flags.
describe.each<TransactionCheck>(['auto', 'probe'])('publish on mysql2 (transaction check: %s)', (check) => {
  const { publish, publishMany } = createMysql2Publisher(check)
  let outbox: Outbox
  let ordered: Outbox

  beforeAll(async () => {
    outbox = await f.outbox(`pub_${check}`)
    ordered = await f.outbox(`ord_${check}`, { orderedTopics: ['ledger'] })
  })

  /** Runs `fn` on a pooled connection inside a transaction, committed on success. */
  async function inTransaction<T>(fn: (conn: mysqlPromise.PoolConnection) => Promise<T>): Promise<T> {
    const conn = await f.pool.getConnection()
    try {
      await conn.beginTransaction()
      const result = await fn(conn)
      await conn.commit()
      return result
    } catch (err) {
      await conn.rollback().catch(() => {})
      throw err
    } finally {
      conn.release()
    }
  }

  /** Both functions (and an ordered message, which writes the keys table first) refuse `handle` and write nothing. */
  async function expectRefused(handle: unknown, label: string) {
    const before = await f.count(outbox)
    const beforeOrdered = await f.count(ordered)
    const err = await expectOutboxError(
      publish(outbox, handle as never, { topic: 'refused', payload: { label } }),
      'NOT_IN_TRANSACTION',
    )
    await expectOutboxError(
      publishMany(outbox, handle as never, [
        { topic: 'refused', payload: 1, dedupKey: `refused-${label}` },
        { topic: 'refused', payload: 2 },
      ]),
      'NOT_IN_TRANSACTION',
    )
    await expectOutboxError(
      publish(ordered, handle as never, { topic: 'ledger', key: `refused-${label}`, payload: 1 }),
      'NOT_IN_TRANSACTION',
    )
    expect(await f.count(outbox), `${label} wrote a row`).toBe(before)
    expect(await f.count(ordered), `${label} wrote an ordered row`).toBe(beforeOrdered)
    const [keys] = await f.query(
      `SELECT COUNT(*) AS n FROM \`${ordered.table.name}_keys\` WHERE \`key\` = ?`,
      [`refused-${label}`],
    )
    expect(Number(keys!.n), `${label} locked an ordered key`).toBe(0)
    return err
  }

  test('refuses a pool: promise Pool, callback Pool, and a PoolCluster', async () => {
    const err = await expectRefused(f.pool, 'promise pool')
    expect(err.message).toMatch(/Pool/)
    await expectRefused(f.pool.pool, 'callback pool')
    const cluster = mysqlPromise.createPoolCluster()
    try {
      await expectRefused(cluster, 'pool cluster')
    } finally {
      await cluster.end()
    }
  })

  test('refuses a pooled connection and a plain connection in autocommit', async () => {
    const pooled = await f.pool.getConnection()
    const plain = await mysqlPromise.createConnection(testMysqlUri())
    try {
      const err = await expectRefused(pooled, 'autocommit pooled connection')
      expect(err.message).toMatch(/not inside a transaction/)
      await expectRefused(plain, 'autocommit connection')
    } finally {
      pooled.release()
      await plain.end()
    }
  })

  test('refuses a connection whose transaction committed, or rolled back', async () => {
    const conn = await mysqlPromise.createConnection(testMysqlUri())
    try {
      await conn.beginTransaction()
      await publish(outbox, conn, { topic: 'kept', payload: 1 })
      await conn.commit()
      await expectRefused(conn, 'after commit')
      await conn.query('START TRANSACTION')
      await conn.query('ROLLBACK')
      await expectRefused(conn, 'after rollback')
      await conn.query('BEGIN')
      await conn.query('COMMIT')
      await expectRefused(conn, 'after BEGIN; COMMIT')
    } finally {
      await conn.end()
    }
  })

  test('refuses a released pool connection, even one released inside its transaction', async () => {
    const conn = await f.pool.getConnection()
    await conn.beginTransaction()
    conn.release()
    const err = await expectRefused(conn, 'released connection')
    expect(err.message).toMatch(/released/)
    // Clean up the transaction the pool now holds on that connection.
    const again = await f.pool.getConnection()
    await again.rollback()
    again.release()
  })

  test('refuses a closed connection, a callback-style connection, null and plain objects', async () => {
    const closed = await mysqlPromise.createConnection(testMysqlUri())
    await closed.beginTransaction()
    await closed.end()
    await expectRefused(closed, 'closed connection')
    const destroyed = await mysqlPromise.createConnection(testMysqlUri())
    await destroyed.beginTransaction()
    destroyed.destroy()
    await expectRefused(destroyed, 'destroyed connection')
    const callback = mysql.createConnection(testMysqlUri())
    try {
      const err = await expectRefused(callback, 'callback connection')
      expect(err.message).toMatch(/promise\(\)/)
    } finally {
      callback.destroy()
    }
    await expectRefused(null, 'null')
    await expectRefused({ query: () => {} }, 'plain object')
    await expectRefused({ connection: {} }, 'object with a connection field')
  })

  test('a publish queued before an unawaited COMMIT is refused, and writes nothing', async () => {
    const conn = await mysqlPromise.createConnection(testMysqlUri())
    try {
      await conn.beginTransaction()
      const pending = publish(outbox, conn, { topic: 'raced', payload: 1 })
      const manyPending = publishMany(outbox, conn, [{ topic: 'raced', payload: 2 }])
      await conn.commit()
      await expectOutboxError(pending, 'NOT_IN_TRANSACTION')
      await expectOutboxError(manyPending, 'NOT_IN_TRANSACTION')
      expect(await f.count(outbox, `topic = 'raced'`)).toBe(0)
    } finally {
      await conn.end()
    }
  })

  test('a session with autocommit = 0 is in an implicit transaction: accepted, ended by COMMIT or ROLLBACK', async () => {
    const conn = await mysqlPromise.createConnection(testMysqlUri())
    try {
      await conn.query('SET autocommit = 0')
      const rolledBack = await publish(outbox, conn, { topic: 'implicit', payload: 'rolled back' })
      await conn.query('ROLLBACK')
      const committed = await publishMany(outbox, conn, [{ topic: 'implicit', payload: 'committed' }])
      expect(await f.count(outbox, 'id = ?', [committed[0]!.id])).toBe(0) // not visible before COMMIT
      await conn.query('COMMIT')
      expect(await f.count(outbox, 'id = ?', [rolledBack.id])).toBe(0)
      expect(await f.count(outbox, 'id = ?', [committed[0]!.id])).toBe(1)
    } finally {
      await conn.end()
    }
  })

  test('round trips: one INSERT without dedupKey (one more for the probe on MySQL), one SELECT more with one', async () => {
    const probe = check === 'probe' ? 1 : 0
    await inTransaction(async (conn) => {
      const com = async () => {
        const [rows] = await conn.query(
          `SHOW SESSION STATUS WHERE Variable_name = 'Com_insert_select' OR Variable_name = 'Com_insert'`,
        )
        return (rows as { Value: string }[]).reduce((n, r) => n + Number(r.Value), 0)
      }
      expect(
        await roundTrips(conn, () => publish(outbox, conn, { topic: 'rt', payload: 1 })),
        'publish',
      ).toBe(1 + probe)
      const msgs = Array.from({ length: 50 }, (_, i) => ({ topic: 'rt', payload: { i }, key: `k${i}` }))
      const insertsBefore = await com()
      expect(await roundTrips(conn, () => publishMany(outbox, conn, msgs)), 'publishMany').toBe(1 + probe)
      expect((await com()) - insertsBefore, 'INSERT statements').toBe(1)
      expect(
        await roundTrips(conn, () =>
          publish(outbox, conn, { topic: 'rt', payload: 1, dedupKey: `rt-${check}` }),
        ),
      ).toBe(2 + probe)
      expect(await roundTrips(conn, () => publishMany(outbox, conn, []))).toBe(0)
    })
    expect(await f.count(outbox, `topic = 'rt'`)).toBe(52)
  })

  test('a rolled-back transaction leaves nothing', async () => {
    let ids: string[] = []
    await expect(
      inTransaction(async (conn) => {
        ids = (
          await publishMany(outbox, conn, [
            { topic: 'rb', payload: 1, dedupKey: `rb-${check}` },
            { topic: 'rb', payload: 2 },
          ])
        ).map((r) => r.id)
        throw new Error('roll back')
      }),
    ).rejects.toThrow('roll back')
    expect(ids).toHaveLength(2)
    expect(await f.count(outbox, `topic = 'rb'`)).toBe(0)
    // The dedup key was released with the rollback.
    const again = await inTransaction((conn) =>
      publish(outbox, conn, { topic: 'rb', payload: 3, dedupKey: `rb-${check}` }),
    )
    expect(again.published).toBe(true)
  })

  test('dedupKey: no-op returning the holder id, in a batch, across transactions, and exact (case, trailing space, long keys)', async () => {
    const key = (s: string) => `${check}:${s}`
    const first = await inTransaction((conn) =>
      publish(outbox, conn, { topic: 'dd', payload: 1, dedupKey: key('a') }),
    )
    expect(first.published).toBe(true)
    const batch = await inTransaction((conn) =>
      publishMany(outbox, conn, [
        { topic: 'dd', payload: 2, dedupKey: key('b') },
        { topic: 'dd', payload: 3, dedupKey: key('a') },
        { topic: 'dd', payload: 4, dedupKey: key('b') },
        { topic: 'dd', payload: 5 },
        { topic: 'dd', payload: 6, dedupKey: key('A') },
        { topic: 'dd', payload: 7, dedupKey: key('a ') },
        { topic: 'dd', payload: 8, dedupKey: key('x'.repeat(1000)) },
        { topic: 'dd', payload: 9, dedupKey: key(`${'x'.repeat(1000)}y`).slice(0, 1024) },
      ]),
    )
    expect(batch.map((r) => r.published)).toEqual([true, false, false, true, true, true, true, true])
    expect(batch[1]!.id).toBe(first.id)
    expect(batch[2]!.id).toBe(batch[0]!.id)
    const rows = await f.query(
      `SELECT dedup_key FROM \`${outbox.table.name}\` WHERE topic = 'dd' ORDER BY id`,
    )
    expect(rows.map((r) => r.dedup_key)).toContain(key('a '))
    expect(await f.count(outbox, `topic = 'dd'`)).toBe(7)
  })

  test('dedupKey held by a concurrent transaction: the second waits for its commit, then gets its id', async () => {
    const dedupKey = `conc-${check}`
    const a = await f.pool.getConnection()
    const b = await f.pool.getConnection()
    try {
      await a.beginTransaction()
      await b.beginTransaction()
      const first = await publish(outbox, a, { topic: 'cc', payload: 1, dedupKey })
      let settled = false
      const second = publish(outbox, b, { topic: 'cc', payload: 2, dedupKey }).finally(() => {
        settled = true
      })
      // b blocks on a's uncommitted unique key; a's commit releases it.
      await waitForLockWait(b, 'the second publish to wait on the first one')
      expect(settled).toBe(false)
      await a.commit()
      expect(await second).toEqual({ id: first.id, published: false })
      await b.commit()
      expect(await f.count(outbox, `topic = 'cc'`)).toBe(1)
    } finally {
      a.release()
      b.release()
    }
  })

  test(`more than ${MYSQL_MAX_ROWS_PER_INSERT} messages: all or nothing, results in order`, async () => {
    const n = MYSQL_MAX_ROWS_PER_INSERT + 5
    const msgs = Array.from({ length: n }, (_, i) => ({ topic: 'bulk', payload: i }))
    const results = await inTransaction((conn) => publishMany(outbox, conn, msgs))
    expect(results).toHaveLength(n)
    expect(results.map((r) => r.id)).toEqual([...results.map((r) => r.id)].sort())
    expect(await f.count(outbox, `topic = 'bulk'`)).toBe(n)
    const [last] = await f.query(
      `SELECT CAST(payload AS CHAR) AS p FROM \`${outbox.table.name}\` WHERE id = ?`,
      [results[n - 1]!.id],
    )
    expect(JSON.parse(String(last!.p))).toBe(n - 1)
  })

  test('ordered topics: a key is locked to commit, so its numbers follow commit order', async () => {
    const a = await f.pool.getConnection()
    const b = await f.pool.getConnection()
    const key = `acct-${check}`
    try {
      await a.beginTransaction()
      await b.beginTransaction()
      // b takes the key first but commits last; a waits on b's key lock, so a is numbered after b.
      const fromB = await publishMany(ordered, b, [
        { topic: 'ledger', key, payload: 'b1' },
        { topic: 'other', key, payload: 'unordered' },
        { topic: 'ledger', key, payload: 'b2' },
      ])
      let aDone = false
      const fromA = publish(ordered, a, { topic: 'ledger', key, payload: 'a1' }).finally(() => {
        aDone = true
      })
      await waitForLockWait(a, 'the second producer to wait for the key')
      expect(aDone).toBe(false)
      await b.commit()
      const one = await fromA
      await a.commit()
      const rows = await f.query(
        `SELECT id, CAST(payload AS CHAR) AS p, seq FROM \`${ordered.table.name}\` WHERE \`key\` = ? ORDER BY seq IS NULL, seq`,
        [key],
      )
      expect(rows.map((r) => JSON.parse(String(r.p)))).toEqual(['b1', 'b2', 'a1', 'unordered'])
      expect(rows[3]!.seq).toBeNull()
      expect(rows.map((r) => r.id)).toEqual([fromB[0]!.id, fromB[2]!.id, one.id, fromB[1]!.id])
    } finally {
      a.release()
      b.release()
    }
  })

  test('ordered topics: concurrent publishes on one transaction (Promise.all) never share a number', async () => {
    const key = `par-${check}`
    const other = `par-${check}-other`
    await inTransaction((conn) =>
      Promise.all([
        publish(ordered, conn, { topic: 'ledger', key, payload: 1 }),
        publish(ordered, conn, { topic: 'ledger', key, payload: 2 }),
        publishMany(ordered, conn, [
          { topic: 'ledger', key, payload: 3 },
          { topic: 'ledger', key: other, payload: 4 },
          { topic: 'ledger', key, payload: 5 },
        ]),
        publish(ordered, conn, { topic: 'ledger', key: other, payload: 6 }),
        publish(outbox, conn, { topic: 'plain', key, payload: 7 }),
      ]),
    )
    const rows = await f.query(
      `SELECT \`key\` AS k, CAST(payload AS CHAR) AS p, seq FROM \`${ordered.table.name}\` WHERE \`key\` IN (?, ?) ORDER BY seq`,
      [key, other],
    )
    const seqsOf = (k: string) => rows.filter((r) => r.k === k).map((r) => Number(r.seq))
    // Distinct and gapless per key, one batch's messages in their order.
    expect(seqsOf(key)).toEqual([1, 2, 3, 4])
    expect(seqsOf(other)).toEqual([1, 2])
    const batch = rows.filter((r) => r.k === key && ['3', '5'].includes(String(r.p)))
    expect(batch.map((r) => String(r.p))).toEqual(['3', '5'])
    const last = await f.query(
      `SELECT \`key\` AS k, seq FROM \`${ordered.table.name}_keys\` WHERE \`key\` IN (?, ?) ORDER BY \`key\``,
      [key, other],
    )
    expect(last.map((r) => [r.k, Number(r.seq)])).toEqual([
      [key, 4],
      [other, 2],
    ])
  })

  test('ordered topics: producers of overlapping key sets do not deadlock', async () => {
    const keys = Array.from({ length: 6 }, (_, i) => `dl-${check}-${i}`)
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, p) =>
        inTransaction((conn) =>
          publishMany(
            ordered,
            conn,
            [...keys]
              .reverse()
              .concat(keys)
              .map((key, i) => ({ topic: 'ledger', key, payload: { p, i } })),
          ),
        ),
      ),
    )
    expect(results.flat()).toHaveLength(8 * 12)
    const seqs = await f.query(
      `SELECT \`key\`, COUNT(*) AS n, COUNT(DISTINCT seq) AS d, MIN(seq) AS lo, MAX(seq) AS hi FROM \`${ordered.table.name}\`
       WHERE \`key\` LIKE ? GROUP BY \`key\``,
      [`dl-${check}-%`],
    )
    for (const s of seqs) {
      expect(Number(s.n)).toBe(16)
      expect(Number(s.d)).toBe(16)
      expect(Number(s.hi) - Number(s.lo)).toBe(15)
    }
  })
})

test('an ordered topic on a table migrated without ordered topics is refused with INVALID_CONFIG, and nothing is written', async () => {
  const plain = await f.outbox('no_keys')
  const ordered = defineOutbox({ table: plain.table.display, orderedTopics: ['ledger'] })
  const { publish } = createMysql2Publisher()
  const conn = await f.pool.getConnection()
  try {
    await conn.beginTransaction()
    const err = await expectOutboxError(
      publish(ordered, conn, { topic: 'ledger', key: 'k', payload: 1 }),
      'INVALID_CONFIG',
    )
    expect(err.message).toMatch(/run migrate/)
    await conn.commit()
  } finally {
    conn.release()
  }
  expect(await f.count(plain)).toBe(0)
  await migrate(ordered, mysqlBackend({ pool: f.pool }))
  const conn2 = await f.pool.getConnection()
  try {
    await conn2.beginTransaction()
    expect((await publish(ordered, conn2, { topic: 'ledger', key: 'k', payload: 1 })).published).toBe(true)
    await conn2.commit()
  } finally {
    conn2.release()
  }
})
