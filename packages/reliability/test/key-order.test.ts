// The per-key commit order check of the crash tests must be able to fail, and its truth must be
// commit order: a hand-made ledger with deliveries out of order is named as such, and the
// producers' numbering makes a second transaction of a key wait for the first (PostgreSQL only,
// where the numbering is built).
import { DIALECTS } from '@outboxkit/conformance'
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { pollUntil } from '../src/database.js'
import { computeKeyOrder } from '../src/key-order.js'
import { createLedger, dropLedger, ledgerTables } from '../src/ledger.js'
import { type LedgerDb, openLedgerDb } from '../src/ledger-db.js'
import { ledgerSql } from '../src/ledger-sql.js'
import { testTarget } from './support/fleet-fixture.js'

const id = (n: number) => `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`

describe.runIf(DIALECTS.includes('postgres'))('postgres', () => {
  const target = testTarget('postgres', 'keyorder')
  let db: LedgerDb
  const runs: ReturnType<typeof ledgerTables>[] = []
  /** A fresh, empty ledger (tables of their own) for one test. */
  async function ledger() {
    const tables = ledgerTables(`okrel_keyorder_${process.pid}_${runs.length}`)
    runs.push(tables)
    await createLedger(db, tables)
    return { tables, ...ledgerSql('postgres', tables) }
  }
  beforeAll(async () => {
    db = await openLedgerDb(target, { max: 4 })
  })
  afterAll(async () => {
    for (const tables of runs) await dropLedger(db, tables)
    await db.close()
  })

  test('first deliveries out of commit order, and a message run again after a later one started, are counted', async () => {
    const { tables, t, numberInKey } = await ledger()
    // Key a: 1, 2, 3 in commit order; key b: 4, 5.
    const keyed: [number, string][] = [
      [1, 'a'],
      [2, 'a'],
      [3, 'a'],
      [4, 'b'],
      [5, 'b'],
    ]
    for (const [n, key] of keyed) {
      await db.execute(`INSERT INTO ${t.produced} (id, topic) VALUES ($1, 'ordered')`, [id(n)])
      await db.execute(numberInKey!, [id(n), key])
    }
    const deliver = (n: number, attempt = 1) =>
      db.execute(`INSERT INTO ${t.ledger} (id, attempt, pid, topic) VALUES ($1, $2, 1, 'ordered')`, [
        id(n),
        attempt,
      ])
    await deliver(1)
    await deliver(2)
    await deliver(2, 2) // again, before the next one started: allowed
    await deliver(1, 2) // again, after 2 had started: counted
    await deliver(3)
    await deliver(5) // b: 5 first...
    await deliver(4) // ...then 4: out of order (and started after a later one)
    expect(await computeKeyOrder(db, tables, 'ordered')).toEqual({
      keys: 2,
      messages: 5,
      firstDeliveries: 5,
      firstOutOfOrder: 1,
      startedAfterLater: 2,
    })
    // The same messages delivered in order, each once, pass.
    const { tables: inOrder, t: t2, numberInKey: number2 } = await ledger()
    for (const [n, key] of keyed) {
      await db.execute(`INSERT INTO ${t2.produced} (id, topic) VALUES ($1, 'ordered')`, [id(n)])
      await db.execute(number2!, [id(n), key])
    }
    for (const n of [4, 1, 2, 5, 3])
      await db.execute(`INSERT INTO ${t2.ledger} (id, attempt, pid, topic) VALUES ($1, 1, 1, 'ordered')`, [
        id(n),
      ])
    expect(await computeKeyOrder(db, inOrder, 'ordered')).toMatchObject({
      firstOutOfOrder: 0,
      startedAfterLater: 0,
    })
  })

  test("the numbering is commit order: a key's second transaction waits for the first, and a rolled-back number is drawn again", async () => {
    const { t, numberInKey } = await ledger()
    if (db.driver.dialect !== 'postgres') throw new Error('postgres only')
    const { pool } = db.driver
    const first = await pool.connect()
    const second = await pool.connect()
    const inTransaction = async (client: pg.PoolClient, n: number) => {
      await client.query('BEGIN')
      return client.query(numberInKey!, [id(n), 'k'])
    }
    try {
      const pid = (await second.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number
      await inTransaction(first, 1)
      const waiting = inTransaction(second, 2)
      await pollUntil(
        async () =>
          (
            await db.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'",
              [pid],
            )
          )[0]!.n === 1,
        { timeoutMs: 10_000, what: "the key's second transaction to wait for the first" },
      )
      await first.query('ROLLBACK')
      await waiting
      await second.query('COMMIT')
      await inTransaction(first, 3)
      await first.query('COMMIT')
    } finally {
      await first.query('ROLLBACK').catch(() => {})
      await second.query('ROLLBACK').catch(() => {})
      first.release()
      second.release()
    }
    const numbered = await db.query<{ id: string; n: number }>(
      `SELECT id::text AS id, n FROM ${t.keyOrder} ORDER BY n`,
    )
    expect(numbered).toEqual([
      { id: id(2), n: 1 },
      { id: id(3), n: 2 },
    ])
  })
})
