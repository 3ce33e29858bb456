// `pnpm --filter @outboxkit/bench bench:dashboard`: the dashboard's API calls on a large outbox.
// Seeds ROWS rows (10 % dead, 1 % pending, the rest delivered: keepDelivered) on the bench
// database, then times each call through dashboard.fetch in this process (server time: the
// statements plus the JSON), median of RUNS, beside a full `count(*)` of the table measured in
// the same run (the ratio says whether a call reads the whole table), and prints each call's plan
// nodes on the table (Seq Scan or which index).
import { writeFileSync } from 'node:fs'
import { defineOutbox, migrate } from '@outboxkit/core'
import { createDashboard } from '@outboxkit/dashboard'
import { pgBackend } from '@outboxkit/pg'
import { adminPool, benchUrl, ensureBenchDatabase } from './db.js'

const ROWS = Number(process.env.BENCH_DASHBOARD_ROWS ?? 1_000_000)
const RUNS = 7
const TABLE = 'bench_dashboard'

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function timed(run: () => Promise<unknown>): Promise<number> {
  const times: number[] = []
  await run() // warm: plans, caches
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now()
    await run()
    times.push(performance.now() - start)
  }
  return median(times)
}

await ensureBenchDatabase()
const pool = adminPool()
const outbox = defineOutbox({ table: TABLE })
const backend = pgBackend({ connectionString: benchUrl(), max: 4 })
const { rows: existing } = await pool.query('SELECT count(*)::int AS n FROM pg_class WHERE relname = $1', [
  TABLE,
])
const have =
  existing[0].n === 1 ? (await pool.query(`SELECT count(*)::int AS n FROM "${TABLE}"`)).rows[0].n : 0
if (have !== ROWS) {
  console.log(`seeding ${ROWS.toLocaleString('en')} rows...`)
  await pool.query(`DROP TABLE IF EXISTS "${TABLE}"`)
  await migrate(outbox, backend)
  await pool.query(`INSERT INTO "${TABLE}" (id, topic, key, payload, state, attempts, available_at, created_at, last_error)
    SELECT gen_random_uuid(), 'topic.' || (i % 10), 'key-' || i, jsonb_build_object('n', i),
      CASE WHEN i % 100 < 10 THEN 'dead' WHEN i % 100 = 10 THEN 'pending' ELSE 'delivered' END,
      CASE WHEN i % 100 < 10 THEN 5 ELSE 1 END,
      now() - i * interval '1 millisecond', now() - i * interval '1 millisecond',
      CASE WHEN i % 100 < 10 THEN 'HTTP 503 from upstream ' || (i % 7) WHEN i % 100 > 10 THEN 'timeout' END
    FROM generate_series(1, ${ROWS}) AS i`)
}
// Always: a table seeded by an earlier version gets the indexes of this one.
await migrate(outbox, backend)
await pool.query(`VACUUM ANALYZE "${TABLE}"`)
const { rows: sample } = await pool.query(
  `SELECT id::text AS id, key FROM "${TABLE}" WHERE state = 'dead' LIMIT 1 OFFSET 5000`,
)
const dashboard = createDashboard({ outbox, backend, basePath: '/outbox' })
const call = (path: string) => async () => {
  const response = await dashboard.fetch(new Request(`http://bench/outbox${path}`))
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`)
  await response.arrayBuffer()
}
const calls: [string, string][] = [
  ['page (HTML)', ''],
  ['stats', '/api/stats'],
  ['dead, first page', '/api/dead'],
  ['dead, one topic', '/api/dead?topic=topic.3'],
  ['dead, search by key', `/api/dead?q=${sample[0].key}`],
  ['dead, search by id', `/api/dead?q=${sample[0].id}`],
  ['dead, search in errors', '/api/dead?q=from%20upstream%203'],
  ['dead, next page', `/api/dead?after=${Date.now() - 600_000}_${sample[0].id}`],
  ['blocked keys', '/api/blocked'],
]
const fullScan = await timed(() => pool.query(`SELECT count(*) FROM "${TABLE}"`))
console.log(
  `\n${ROWS.toLocaleString('en')} rows (10 % dead); full count(*) of the table: ${fullScan.toFixed(1)} ms (median of ${RUNS})\n`,
)
console.log('| call | median ms | × full scan |')
console.log('| --- | ---: | ---: |')
const results: Record<string, { ms: number; ratio: number }> = {}
for (const [name, path] of calls) {
  const ms = await timed(call(path))
  results[name] = { ms, ratio: ms / fullScan }
  console.log(`| ${name} | ${ms.toFixed(1)} | ${(ms / fullScan).toFixed(2)} |`)
}
const out = new URL(`../results/dashboard-${ROWS}.json`, import.meta.url)
writeFileSync(
  out,
  `${JSON.stringify({ rows: ROWS, runs: RUNS, fullScanMs: fullScan, results, at: new Date().toISOString() }, null, 2)}\n`,
)
await backend.close()
await pool.end()
