// Two transactions with one message id at once, on real servers: the second processOnce WAITS on
// the first's uncommitted inbox row (seen in the server's own lock views), then skips when the
// first commits or runs when it rolls back. SQLite has one writer: the second cannot even write.
import {
  deferred,
  removeSqliteFile,
  tempSqliteFile,
  testDatabaseUrl,
  testMysqlUri,
  uniqueTableName,
  waitFor,
} from '@outboxkit/conformance'
import { defineInbox, type Inbox, migrate } from '@outboxkit/core'
import { mysqlBackend, processOnce as mysqlProcessOnce } from '@outboxkit/mysql'
import { pgBackend, processOnce as pgProcessOnce } from '@outboxkit/pg'
import { sqliteBackend, processOnce as sqliteProcessOnce } from '@outboxkit/sqlite'
import Database from 'better-sqlite3'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'

/** Runs the first transaction up to its callback, starts the second, waits until it is blocked, then ends the first. */
async function raceOnServer(opts: {
  first: (fn: () => Promise<void>) => Promise<unknown>
  second: () => Promise<{ processed: boolean }>
  blocked: () => Promise<boolean>
  commit: boolean
}) {
  const inFirst = deferred()
  const release = deferred()
  const first = opts
    .first(async () => {
      inFirst.resolve()
      await release.promise
      if (!opts.commit) throw new Error('rolled back')
    })
    .catch((e: unknown) => e)
  await inFirst.promise
  let secondDone = false
  const second = opts.second().finally(() => {
    secondDone = true
  })
  await waitFor(() => opts.blocked(), { timeoutMs: 15_000, intervalMs: 20 })
  expect(secondDone, 'the second must wait for the first').toBe(false)
  release.resolve()
  await first
  return second
}

/**
 * The two races of one server: the first commits (the second skips) or rolls back (the second
 * runs). `processInTx` runs processOnce in a transaction of its own on that server.
 */
function testSecondWaitsOnFirst(
  processInTx: (id: string, fn: () => unknown) => Promise<{ processed: boolean }>,
  blocked: () => Promise<boolean>,
): void {
  for (const commit of [true, false]) {
    test(`first ${commit ? 'commits: the second skips' : 'rolls back: the second runs'}`, async () => {
      const id = `m-${commit}`
      let ran = 0
      const second = await raceOnServer({
        commit,
        first: (fn) => processInTx(id, fn),
        second: () => processInTx(id, () => ran++),
        blocked,
      })
      expect(second.processed).toBe(!commit)
      expect(ran).toBe(commit ? 0 : 1)
    })
  }
}

describe('PostgreSQL: the second waits on the uncommitted row (ON CONFLICT DO NOTHING)', () => {
  const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 })
  let inbox: Inbox
  beforeAll(async () => {
    inbox = defineInbox({ table: uniqueTableName('inbox_lock'), consumer: 'c' })
    await migrate(inbox, pgBackend({ pool }))
  })
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS ${inbox.table.name}`)
    await pool.end()
  })
  const inTx = async <T>(fn: (c: pg.PoolClient) => Promise<T>) => {
    const c = await pool.connect()
    try {
      await c.query('BEGIN')
      const r = await fn(c)
      await c.query('COMMIT')
      return r
    } catch (e) {
      await c.query('ROLLBACK')
      throw e
    } finally {
      c.release()
    }
  }
  const blocked = async () =>
    (
      await pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
        [`%${inbox.table.name}%`],
      )
    ).rows[0].n > 0
  testSecondWaitsOnFirst((id, fn) => inTx((c) => pgProcessOnce(inbox, c, { id }, fn)), blocked)
})

describe('MariaDB: the second waits on the uncommitted row (INSERT IGNORE)', () => {
  const pool = mysql.createPool({ uri: testMysqlUri(), connectionLimit: 4 })
  let inbox: Inbox
  beforeAll(async () => {
    inbox = defineInbox({ table: uniqueTableName('inbox_lock'), consumer: 'c' })
    await migrate(inbox, mysqlBackend({ pool }))
  })
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS ${inbox.table.name}`)
    await pool.end()
  })
  const inTx = async <T>(fn: (c: mysql.PoolConnection) => Promise<T>) => {
    const c = await pool.getConnection()
    try {
      await c.beginTransaction()
      const r = await fn(c)
      await c.commit()
      return r
    } catch (e) {
      await c.rollback()
      throw e
    } finally {
      c.release()
    }
  }
  // The second's INSERT still executing while the first holds the row: it waits on that row
  // (MariaDB lists an INSERT ... SELECT in its processlist, not always in INNODB_TRX's LOCK WAIT).
  const blocked = async () => {
    const [rows] = await pool.query(
      `SELECT count(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND COMMAND = 'Query'`,
      [`INSERT IGNORE INTO \`${inbox.table.name}\`%`],
    )
    return Number((rows as { n: number }[])[0]!.n) > 0
  }
  testSecondWaitsOnFirst((id, fn) => inTx((c) => mysqlProcessOnce(inbox, c, { id }, fn)), blocked)
})

describe('SQLite: one writer, so a second connection never meets an uncommitted row', () => {
  const file = tempSqliteFile('inbox-lock')
  const a = new Database(file)
  a.pragma('journal_mode = WAL')
  const b = new Database(file, { timeout: 0 })
  const inbox = defineInbox({ table: 'inbox_lock', consumer: 'c' })
  beforeAll(() => migrate(inbox, sqliteBackend(a)))
  afterAll(() => {
    a.close()
    b.close()
    removeSqliteFile(file)
  })
  test('while the first holds the write lock the second cannot write (SQLITE_BUSY, nothing run); after its commit it skips', async () => {
    a.exec('BEGIN IMMEDIATE')
    await sqliteProcessOnce(inbox, a, { id: 'x' }, () => 1)
    expect(() => b.exec('BEGIN IMMEDIATE')).toThrow(/locked|busy/i)
    b.exec('BEGIN')
    let ran = 0
    const err = await Promise.resolve()
      .then(() => sqliteProcessOnce(inbox, b, { id: 'x' }, () => ran++))
      .catch((e: unknown) => e)
    expect(String(err)).toMatch(/locked|busy/i)
    b.exec('ROLLBACK')
    a.exec('COMMIT')
    b.exec('BEGIN IMMEDIATE')
    expect(await sqliteProcessOnce(inbox, b, { id: 'x' }, () => ran++)).toEqual({ processed: false })
    b.exec('COMMIT')
    expect(ran).toBe(0)
  })
})
