// The admin reads the dashboard polls (stats, listDead, countDead, blockedKeys) must not read the
// delivered rows of a large table: on 40 000 rows, 95 % delivered, the plans PostgreSQL picks
// (custom and generic) reach the table through its partial indexes, never by a sequential scan.
import { testDatabaseUrl, uniqueTableName } from '@outboxkit/conformance'
import { defineOutbox, migrate } from '@outboxkit/core'
import { postgresStatements } from '@outboxkit/core/adapter'
import { pgBackend } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'

const ROWS = 40_000

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  Plans?: PlanNode[]
}

/** The nodes that read `table`: their type and index. */
function scans(node: PlanNode, table: string): string[] {
  const own =
    node['Relation Name'] === table
      ? [`${node['Node Type']}${node['Index Name'] ? ` ${node['Index Name']}` : ''}`]
      : []
  return [...own, ...(node.Plans ?? []).flatMap((child) => scans(child, table))]
}

describe('PostgreSQL plans of the admin reads on a table of delivered rows', () => {
  const table = uniqueTableName('admin_plans')
  const outbox = defineOutbox({ table })
  const sql = postgresStatements(outbox.table)
  const client = new pg.Client({ connectionString: testDatabaseUrl() })
  let deadId = ''

  beforeAll(async () => {
    const backend = pgBackend({ connectionString: testDatabaseUrl(), max: 1 })
    await migrate(outbox, backend)
    await backend.close()
    await client.connect()
    await client.query(
      `INSERT INTO "${table}" (id, topic, key, payload, state, last_error)
       SELECT gen_random_uuid(), 't' || (i % 5), 'k' || i, '{}',
         CASE WHEN i % 100 < 3 THEN 'dead' WHEN i % 100 < 5 THEN 'pending' ELSE 'delivered' END, 'boom ' || i
       FROM generate_series(1, ${ROWS}) AS i`,
    )
    await client.query(`VACUUM ANALYZE "${table}"`)
    deadId = (await client.query(`SELECT id::text AS id FROM "${table}" WHERE state = 'dead' LIMIT 1`))
      .rows[0].id
  })

  afterAll(async () => {
    await client.query(`DROP TABLE IF EXISTS "${table}"`).catch(() => {})
    await client.end()
  })

  const statements: [string, () => string, () => unknown[]][] = [
    ['stats', () => sql.stats, () => [['pending', 'processing', 'dead']]],
    ['listDead, first page', () => sql.listDead, () => [null, 51, null, null, null, null]],
    ['listDead, one topic, searched', () => sql.listDead, () => [['t1'], 51, null, null, 'boom 7', null]],
    ['listDead, by id, next page', () => sql.listDead, () => [null, 51, Date.now(), deadId, deadId, deadId]],
    ['countDead, searched', () => sql.countDead, () => [null, 10_001, 'k7', null]],
  ]

  for (const mode of ['force_custom_plan', 'force_generic_plan'] as const) {
    for (const [what, text, values] of statements) {
      test(`${what} (${mode}): through the partial indexes, no sequential scan`, async () => {
        await client.query(`SET plan_cache_mode = ${mode}`)
        const { rows } = await client.query({
          name: `admin_plans_${mode}_${what.replace(/\W+/g, '_')}`,
          text: `EXPLAIN (FORMAT JSON) ${text()}`,
          values: values(),
        })
        const plan = (rows[0] as { 'QUERY PLAN': { Plan: PlanNode }[] })['QUERY PLAN'][0]!.Plan
        const reads = scans(plan, table)
        expect(reads.length, JSON.stringify(reads)).toBeGreaterThan(0)
        expect(
          reads.filter((r) => r.startsWith('Seq Scan')),
          JSON.stringify(reads),
        ).toEqual([])
      })
    }
  }
})
