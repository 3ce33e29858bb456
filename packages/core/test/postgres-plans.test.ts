// The relay's statements must find their rows by index whatever the table's statistics say.
// Statistics taken while every row was pending say "no row is processing": a settle that filtered
// the table on `state = 'processing'` alone was then planned as a scan of the whole table with
// every settlement compared to every row (23 s for 1 000 settlements on 100 000 rows). These tests
// make such statistics on purpose and read the plans PostgreSQL picks, custom and generic.
import { testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import { defineOutbox, migrate } from '@outboxkit/core'
import { postgresStatements } from '@outboxkit/core/adapter'
import { pgBackend } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'

const ROWS = 20_000
const BATCH = 1_000

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Rows Removed by Join Filter'?: number
  Plans?: PlanNode[]
}

/** Row pairs a join compared and threw away, over the whole plan (the signature of the bad plan). */
function joinFilterRemovals(node: PlanNode): number {
  let n = node['Rows Removed by Join Filter'] ?? 0
  for (const child of node.Plans ?? []) n += joinFilterRemovals(child)
  return n
}

function reads(node: PlanNode, table: string): number {
  let n = node['Relation Name'] === table && node['Node Type'] !== 'ModifyTable' ? 1 : 0
  for (const child of node.Plans ?? []) n += reads(child, table)
  return n
}

describe('PostgreSQL plans with statistics taken while every row was pending', () => {
  const table = uniqueTableName('plans')
  const outbox = defineOutbox({ table })
  const sql = postgresStatements(outbox.table)
  const client = new pg.Client({ connectionString: testDatabaseUrl() })
  let ids: string[] = []

  beforeAll(async () => {
    const backend = pgBackend({ connectionString: testDatabaseUrl(), max: 1 })
    await migrate(outbox, backend)
    await backend.close()
    await client.connect()
    await client.query(
      `INSERT INTO "${table}" (id, topic, payload) SELECT gen_random_uuid(), 't', '{}' FROM generate_series(1, ${ROWS})`,
    )
    await client.query(`ANALYZE "${table}"`)
    // Claimed since: processing, first attempt; the statistics still say every row is pending.
    await client.query(`UPDATE "${table}" SET state = 'processing', attempts = 1`)
    ids = (await client.query(`SELECT id::text AS id FROM "${table}" LIMIT ${BATCH}`)).rows.map((r) => r.id)
  })

  afterAll(async () => {
    await client.query(`DROP TABLE IF EXISTS "${table}"`).catch(() => {})
    await client.end()
  })

  const ones = () => ids.map(() => 1)
  const outcomes = () => ids.map((_, i) => ['delivered', 'retry', 'dead'][i % 3])
  const statements: [string, () => string, () => unknown[]][] = [
    ['settle, all delivered', () => sql.settleDelivered, () => [ids, ones()]],
    [
      'settle, mixed outcomes',
      () => sql.settle,
      () => [ids, ones(), outcomes(), ids.map(() => 100), ids.map(() => 'e'), false],
    ],
    [
      'settle, keepDelivered',
      () => sql.settle,
      () => [ids, ones(), outcomes(), ids.map(() => 100), ids.map(() => 'e'), true],
    ],
    ['lease extension', () => sql.extendLease, () => [ids, ones(), 30_000]],
  ]

  for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
    for (const [what, text, values] of statements) {
      test(`${what} (${mode}): no row is compared with every settlement`, async () => {
        await client.query(`SET plan_cache_mode = ${mode}`)
        // EXPLAIN ANALYZE runs the statement: in a transaction that is rolled back.
        await client.query('BEGIN')
        try {
          const { rows } = await client.query({
            name: `plans_${mode}_${what.replace(/\W+/g, '_')}`,
            text: `EXPLAIN (ANALYZE, FORMAT JSON) ${text()}`,
            values: values(),
          })
          const plan = (rows[0] as { 'QUERY PLAN': { Plan: PlanNode }[] })['QUERY PLAN'][0]!.Plan
          expect(reads(plan, table)).toBeGreaterThan(0)
          // The bad plan compared ROWS x BATCH pairs (20 000 000 here); a hash or index join, none.
          expect(joinFilterRemovals(plan)).toBeLessThanOrEqual(BATCH)
        } finally {
          await client.query('ROLLBACK')
        }
      })
    }
  }

  test('the settles apply to every fenced row with these statistics (checked by raw SQL)', async () => {
    await client.query('RESET plan_cache_mode')
    const half = ids.slice(0, BATCH / 2)
    const rest = ids.slice(BATCH / 2)
    const notApplied = await client.query(sql.settleDelivered, [half, half.map(() => 1)])
    expect(notApplied.rows).toEqual([])
    // One stale settlement (attempt 2 of a row at attempt 1) must not apply.
    const stale = await client.query(sql.settle, [
      rest,
      rest.map((_, i) => (i === 0 ? 2 : 1)),
      rest.map(() => 'retry'),
      rest.map(() => 0),
      rest.map(() => 'e'),
      false,
    ])
    expect(stale.rows.map((r) => r.id)).toEqual([rest[0]])
    const { rows } = await client.query(
      `SELECT state, count(*)::int AS n FROM "${table}" WHERE id = ANY($1::uuid[]) GROUP BY state ORDER BY state`,
      [ids],
    )
    expect(rows).toEqual([
      { state: 'pending', n: rest.length - 1 },
      { state: 'processing', n: 1 },
    ])
  })
})
