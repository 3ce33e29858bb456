// The ledger checker itself must be able to fail: feed it a hand-made ledger with every kind of
// violation and check it names each one (a negative control for scenarios 1 and 2).
import { testDatabaseUrl } from '@outboxkit/conformance'
import { quoteIdent } from '@outboxkit/core/adapter'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { quietPool } from '../src/database.js'
import { createLedger, dropLedger, ledgerTables } from '../src/ledger.js'
import { computeVerdict, violations } from '../src/verdict.js'

const pool = quietPool({ connectionString: testDatabaseUrl(), max: 2 })
const tables = ledgerTables(`okrel_verdict_${process.pid}`)
beforeAll(() => createLedger(pool, tables))
afterAll(async () => {
  await dropLedger(pool, tables)
  await pool.end()
})

const id = (n: number) => `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`
const q = (name: string) => quoteIdent(name)

test('lost, phantom, unknown, same-attempt and unexplained duplicates are all detected', async () => {
  await pool.query(
    `INSERT INTO ${q(tables.produced)} (id, topic) VALUES ($1, 'work'), ($2, 'work'), ($3, 'work')`,
    [id(1), id(2), id(3)],
  )
  await pool.query(`INSERT INTO ${q(tables.rolledBack)} (id) VALUES ($1)`, [id(4)])
  const ledger = (n: number, attempt: number, pid = 1) =>
    pool.query(`INSERT INTO ${q(tables.ledger)} (id, attempt, pid, topic) VALUES ($1, $2, $3, 'work')`, [
      id(n),
      attempt,
      pid,
    ])
  await ledger(1, 1)
  await ledger(1, 1, 2) // the same claim handled twice
  await ledger(2, 1)
  await ledger(2, 2) // a redelivery nobody explains
  // id(3) never delivered: lost
  await ledger(4, 1) // rolled back but delivered: phantom
  await ledger(5, 1) // never produced: unknown
  const v = await computeVerdict(pool, tables)
  expect(v).toMatchObject({
    committed: 3,
    rolledBack: 1,
    delivered: 4,
    lost: 1,
    phantom: 1,
    unknown: 1,
    duplicates: 2,
    duplicatedMessages: 2,
    sameAttempt: 1,
    unexplained: 2,
  })
  expect(violations(v)).toHaveLength(6)

  // Explaining the first delivery of id(2) (its relay was killed) clears that duplicate only.
  await pool.query(`INSERT INTO ${q(tables.explained)} (id, attempt, why, pid) VALUES ($1, 1, 'killed', 1)`, [
    id(2),
  ])
  const after = await computeVerdict(pool, tables)
  expect(after.unexplained).toBe(1)
  expect(after.explained).toEqual({ killed: 1 })
})
