// The ledger checker itself must be able to fail: feed it a hand-made ledger with every kind of
// violation and check it names each one (a negative control for scenarios 1 and 2).
import { DIALECTS } from '@outboxkit/conformance'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createLedger, dropLedger, ledgerTables } from '../src/ledger.js'
import type { LedgerDb } from '../src/ledger-db.js'
import { openLedgerDb } from '../src/ledger-db.js'
import { ledgerSql } from '../src/ledger-sql.js'
import { computeVerdict, violations } from '../src/verdict.js'
import { testTarget } from './support/fleet-fixture.js'

const id = (n: number) => `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`

// The verdict's SQL is per dialect (ledger-sql.ts): the negative control runs on each one.
describe.each(DIALECTS)('%s', (dialect) => {
  const target = testTarget(dialect, 'verdict')
  const tables = ledgerTables(`okrel_verdict_${process.pid}`)
  const { t } = ledgerSql(dialect, tables)
  let db: LedgerDb
  beforeAll(async () => {
    db = await openLedgerDb(target, { max: 2 })
    await createLedger(db, tables)
  })
  afterAll(async () => {
    await dropLedger(db, tables)
    await db.close()
    target.dispose()
  })

  test('lost, phantom, unknown, same-attempt and unexplained duplicates are all detected', async () => {
    await db.execute(
      `INSERT INTO ${t.produced} (id, topic) VALUES ($1, 'work'), ($2, 'work'), ($3, 'work')`,
      [id(1), id(2), id(3)],
    )
    await db.execute(`INSERT INTO ${t.rolledBack} (id) VALUES ($1)`, [id(4)])
    const ledger = (n: number, attempt: number, pid = 1) =>
      db.execute(`INSERT INTO ${t.ledger} (id, attempt, pid, topic) VALUES ($1, $2, $3, 'work')`, [
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
    const v = await computeVerdict(db, tables)
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
    await db.execute(`INSERT INTO ${t.explained} (id, attempt, why, pid) VALUES ($1, 1, 'killed', 1)`, [
      id(2),
    ])
    const after = await computeVerdict(db, tables)
    expect(after.unexplained).toBe(1)
    expect(after.explained).toEqual({ killed: 1 })
  })
})
