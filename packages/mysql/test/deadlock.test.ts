import { randomUUID } from 'node:crypto'
import { waitFor } from '@outboxkit/conformance'
import type { Outbox, OutboxBackend } from '@outboxkit/core'
import { mysqlBackend } from '@outboxkit/mysql'
import type mysql from 'mysql2/promise'
import { afterAll, describe, expect, test } from 'vitest'
import { MysqlFixture } from './support.js'

const f = new MysqlFixture()
afterAll(() => f.close())

/** Seeds two rows in `state` with `attempts`, ids in ascending order. */
async function seedTwo(outbox: Outbox, state: string, attempts: number): Promise<[string, string]> {
  const ids = [randomUUID(), randomUUID()].sort() as [string, string]
  await f.query(
    `INSERT INTO \`${outbox.table.name}\` (id, topic, payload, state, attempts, available_at)
     VALUES (?, 't', '{}', ?, ?, UTC_TIMESTAMP(6) + INTERVAL 60 SECOND), (?, 't', '{}', ?, ?, UTC_TIMESTAMP(6) + INTERVAL 60 SECOND)`,
    ids.flatMap((id) => [id, state, attempts]),
  )
  return ids
}

/** Deadlocks InnoDB reported since the server started (MariaDB's `Innodb_deadlocks`; MySQL: undefined). */
async function deadlocks(): Promise<number | undefined> {
  const [r] = await f.query(`SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'`)
  return r === undefined ? undefined : Number(r.Value)
}

async function rows(outbox: Outbox) {
  return (
    await f.query(`SELECT id, state, attempts FROM \`${outbox.table.name}\` WHERE topic = 't' ORDER BY id`)
  ).map((r) => ({ id: String(r.id), state: String(r.state), attempts: Number(r.attempts) }))
}

/**
 * Provokes a real deadlock between `op` and a blocker transaction that lock the rows `a < b` in
 * opposite orders: the blocker locks `b` (and runs `change` on it), `op` (which locks in id
 * order) takes `a` and waits for `b`, then the blocker asks for `a`. InnoDB rolls back the
 * lighter transaction: the blocker first writes 300 ballast rows, so the victim is `op`. The
 * blocker then commits, and `op`'s outcome is returned.
 */
async function deadlocked<T>(
  outbox: Outbox,
  [a, b]: [string, string],
  op: () => Promise<T>,
  change?: (blocker: mysql.PoolConnection) => Promise<void>,
): Promise<T> {
  const t = `\`${outbox.table.name}\``
  const blocker = await f.pool.getConnection()
  const blockerThread = (blocker as unknown as { connection: { threadId: number } }).connection.threadId
  let pending: Promise<T> | undefined
  try {
    await blocker.beginTransaction()
    const ballast = Array.from({ length: 300 }, () => randomUUID())
    await blocker.query(
      `INSERT INTO ${t} (id, topic, payload) VALUES ${ballast.map(() => `(?, 'ballast', '{}')`).join(', ')}`,
      ballast,
    )
    await blocker.query(`SELECT id FROM ${t} WHERE id = ? FOR UPDATE`, [b])
    await change?.(blocker)
    const before = await deadlocks()
    pending = op()
    pending.catch(() => {})
    // InnoDB refreshes information_schema.innodb_trx at most every 100 ms: poll slower than that.
    await waitFor(
      async () =>
        (
          await f.query(
            `SELECT 1 FROM information_schema.innodb_trx
             WHERE trx_state = 'LOCK WAIT' AND trx_mysql_thread_id <> ? AND trx_query LIKE ?`,
            [blockerThread, `%${outbox.table.name}%`],
          )
        ).length > 0,
      { what: 'the operation to wait for the row the blocker holds', intervalMs: 150 },
    )
    // The cycle: InnoDB rolls the operation back at once (the blocker is heavier), so this returns.
    await blocker.query(`SELECT id FROM ${t} WHERE id = ? FOR UPDATE`, [a])
    const after = await deadlocks()
    if (before !== undefined) expect(after, 'InnoDB reported the deadlock').toBeGreaterThan(before)
    await blocker.commit()
    return await pending
  } finally {
    await blocker.rollback().catch(() => {})
    blocker.release()
    await pending?.catch(() => {})
  }
}

describe('a transaction of mysqlBackend chosen as a deadlock victim is retried', () => {
  const backend = (): OutboxBackend => mysqlBackend({ pool: f.pool })

  test('settle (DELETE of delivered rows): both rows settled once, no error', async () => {
    const outbox = await f.outbox('dl_settle')
    const ids = await seedTwo(outbox, 'processing', 1)
    const settled = await deadlocked(outbox, ids, () =>
      backend().settle({
        table: outbox.table,
        keepDelivered: false,
        settlements: ids.map((id) => ({ id, attempts: 1, outcome: 'delivered' as const })),
      }),
    )
    expect(settled.sort()).toEqual(ids)
    expect(await rows(outbox)).toEqual([])
  })

  test('settle keeps its fence exact: the retry re-reads it, so a row reclaimed meanwhile is not settled', async () => {
    const outbox = await f.outbox('dl_fence')
    const [a, b] = await seedTwo(outbox, 'processing', 1)
    // The blocker stands for another relay that reclaimed `b` (attempts 2) while the settle waited.
    const settled = await deadlocked(
      outbox,
      [a, b],
      () =>
        backend().settle({
          table: outbox.table,
          keepDelivered: true,
          settlements: [
            { id: a, attempts: 1, outcome: 'retry', delayMs: 0, error: 'again' },
            { id: b, attempts: 1, outcome: 'dead', error: 'stale' },
          ],
        }),
      async (blocker) => {
        await blocker.query(`UPDATE \`${outbox.table.name}\` SET attempts = 2 WHERE id = ?`, [b])
      },
    )
    expect(settled).toEqual([a])
    expect(await rows(outbox)).toEqual([
      { id: a, state: 'pending', attempts: 1 },
      { id: b, state: 'processing', attempts: 2 },
    ])
  })

  test('extendLease', async () => {
    const outbox = await f.outbox('dl_lease')
    const ids = await seedTwo(outbox, 'processing', 1)
    const extended = await deadlocked(outbox, ids, () =>
      backend().extendLease!({
        table: outbox.table,
        leaseMs: 600_000,
        rows: ids.map((id) => ({ id, attempts: 1 })),
      }),
    )
    expect(extended.sort()).toEqual(ids)
    const [r] = await f.query(
      `SELECT MIN(TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(6), available_at)) AS s FROM \`${outbox.table.name}\` WHERE topic = 't'`,
    )
    expect(Number(r!.s)).toBeGreaterThan(500)
  })

  test('an admin statement (redrive)', async () => {
    const outbox = await f.outbox('dl_redrive')
    const ids = await seedTwo(outbox, 'dead', 3)
    const redriven = await deadlocked(outbox, ids, () =>
      backend().redrive({ table: outbox.table, ids: [...ids] }),
    )
    expect(redriven).toBe(2)
    expect(await rows(outbox)).toEqual(ids.map((id) => ({ id, state: 'pending', attempts: 0 })))
  })
})
