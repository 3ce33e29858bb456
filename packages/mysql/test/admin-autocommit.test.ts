import { randomUUID } from 'node:crypto'
import { mysqlBackend } from '@outboxkit/mysql'
import { afterAll, expect, test } from 'vitest'
import { MysqlFixture, testPool } from './support.js'

const f = new MysqlFixture()
// A pool whose sessions run with autocommit = 0: every statement opens an implicit transaction
// that only a COMMIT ends (some frameworks configure pools this way).
const noAutocommit = testPool({ connectionLimit: 2 })
noAutocommit.on('connection', (c) => {
  ;(c as unknown as { query(sql: string): void }).query('SET SESSION autocommit = 0')
})
afterAll(async () => {
  await noAutocommit.end()
  await f.close()
})

test('purge, redrive and discard commit on a { pool } whose sessions run autocommit = 0', async () => {
  const outbox = await f.outbox('admin_ac0')
  const ids = Array.from({ length: 4 }, () => randomUUID())
  await f.query(
    `INSERT INTO \`${outbox.table.name}\` (id, topic, payload, state, attempts, available_at) VALUES
     (?, 'a', '{}', 'dead', 3, UTC_TIMESTAMP(6)), (?, 'b', '{}', 'dead', 3, UTC_TIMESTAMP(6)),
     (?, 'c', '{}', 'delivered', 1, UTC_TIMESTAMP(6) - INTERVAL 1 HOUR), (?, 'd', '{}', 'pending', 0, UTC_TIMESTAMP(6))`,
    ids,
  )
  const backend = mysqlBackend({ pool: noAutocommit })
  expect(await backend.redrive({ table: outbox.table, topics: ['a'] })).toBe(1)
  expect(await backend.discard!({ table: outbox.table, topics: ['b'] })).toBe(1)
  expect(await backend.purge({ table: outbox.table, states: ['delivered'], olderThanMs: 60_000 })).toBe(1)
  // Read on another connection: only committed changes are visible there.
  const rows = await f.query(`SELECT topic, state FROM \`${outbox.table.name}\` ORDER BY topic`)
  expect(rows.map((r) => [r.topic, r.state])).toEqual([
    ['a', 'pending'],
    ['d', 'pending'],
  ])
})
