import { fileURLToPath } from 'node:url'
import { parseTableName, postgresStatements, statementName } from '@outboxkit/core/adapter'
import pg from 'pg'
import { bundle } from '../bundle.js'
import { runChild } from '../child-runner.js'
import { type DrainResult, loadOutboxBacklog, resetOutbox } from '../contenders/outboxkit.js'
import { median, percentile, round } from '../stats.js'
import { OUTBOX_TABLE, TOPIC } from '../workload.js'
import { RELAY_DEFAULTS } from './drain.js'

/** Claim cost under one table condition. */
export interface ClaimCost {
  condition: string
  liveRows: number
  deadTuples: number
  tableMiB: number
  indexMiB: number
  /** Median and p95 of a 100-row claim (core's statement, named prepared statement like pgBackend). */
  claimP50Ms: number
  claimP95Ms: number
  /** Rows per second of a single-connection claim(100) + delete loop. */
  rowsPerSecond: number
  /** The top of EXPLAIN (ANALYZE, BUFFERS) for a custom and a generic plan of the claim. */
  customPlan: string
  genericPlan: string
}

/** Scenario 6's result. */
export interface MemoryResult {
  messages: number
  relay: string
  peakRssMiB: number
  sampledPeakRssMiB: number
  baselineRssMiB: number
  perSecond: number
  seconds: number
  rssSamples: [number, number][]
}

const CLAIM_LIMIT = 100
const SAMPLES = 30

async function stats(client: pg.Client) {
  const { rows } = await client.query(
    `SELECT n_live_tup::int AS live, n_dead_tup::int AS dead,
       pg_table_size($1::regclass) AS t, pg_indexes_size($1::regclass) AS i
     FROM pg_stat_user_tables WHERE relid = $1::regclass`,
    [OUTBOX_TABLE],
  )
  const r = rows[0] ?? { live: 0, dead: 0, t: 0, i: 0 }
  return {
    live: r.live,
    dead: r.dead,
    tableMiB: round(Number(r.t) / 2 ** 20, 1),
    indexMiB: round(Number(r.i) / 2 ** 20, 1),
  }
}

function planSummary(lines: string[]): string {
  // Keep the plan nodes and timing, drop buffers detail lines to keep results readable.
  return lines
    .filter((l) => !/^\s*(Buffers|Planning:|I\/O Timings)/.test(l))
    .slice(0, 24)
    .join('\n')
}

/** Measures the claim on the current table: EXPLAIN of custom and generic plans, then timed claims. */
export async function measureClaim(url: string, condition: string): Promise<ClaimCost> {
  const table = parseTableName(OUTBOX_TABLE)
  const sql = postgresStatements(table)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const params = [[TOPIC], CLAIM_LIMIT, 30_000, 10]
  const before = await stats(client)
  await client.query('BEGIN')
  const custom = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql.claim}`, params)
  await client.query('ROLLBACK')
  await client.query('BEGIN')
  await client.query("SET LOCAL plan_cache_mode = 'force_generic_plan'")
  await client.query(`PREPARE bench_generic_claim AS ${sql.claim}`)
  const generic = await client.query(
    `EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_generic_claim('{${TOPIC}}', ${CLAIM_LIMIT}, 30000, 10)`,
  )
  await client.query('ROLLBACK')
  const name = statementName('outboxkit_claim', sql.claim)
  const times: number[] = []
  let rowsDone = 0
  const t0 = performance.now()
  for (let i = 0; i < SAMPLES + 2; i++) {
    const t = performance.now()
    const { rows } = await client.query({ name, text: sql.claim, values: params })
    const dt = performance.now() - t
    if (i >= 2) {
      times.push(dt)
      rowsDone += rows.length
    }
    if (rows.length > 0) {
      await client.query(`DELETE FROM ${OUTBOX_TABLE} WHERE id = ANY($1::uuid[])`, [rows.map((r) => r.id)])
    }
  }
  const elapsed = (performance.now() - t0) / 1000
  await client.end()
  return {
    condition,
    liveRows: before.live,
    deadTuples: before.dead,
    tableMiB: before.tableMiB,
    indexMiB: before.indexMiB,
    claimP50Ms: round(median(times)),
    claimP95Ms: round(percentile(times, 95)),
    rowsPerSecond: round(rowsDone / elapsed, 0),
    customPlan: planSummary(custom.rows.map((r) => r['QUERY PLAN'] as string)),
    genericPlan: planSummary(generic.rows.map((r) => r['QUERY PLAN'] as string)),
  }
}

async function exec(url: string, ...statements: string[]) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  for (const s of statements) await client.query(s)
  await client.end()
}

/**
 * Scenarios 5 and 6. Claim cost on fresh tables of each size, with stale statistics, and after a
 * large backlog was drained (dead tuples, autovacuum held off on the table so the worst case is
 * measured, then after VACUUM). The large drain itself is scenario 6: a relay on defaults in a
 * child process, its RSS sampled.
 */
export async function runGrowthScenario(
  url: string,
  opts: { sizes: number[]; staleSize: number; deadSize: number },
  log: (line: string) => void,
): Promise<{ claims: ClaimCost[]; memory: MemoryResult; autovacuum: Record<string, unknown> }> {
  const claims: ClaimCost[] = []
  const record = (c: ClaimCost) => {
    claims.push(c)
    log(
      `  ${c.condition}: claim(100) p50 ${c.claimP50Ms} ms, p95 ${c.claimP95Ms} ms, ${c.rowsPerSecond} rows/s (dead tuples ${c.deadTuples})`,
    )
  }
  const noAutovacuum = `ALTER TABLE ${OUTBOX_TABLE} SET (autovacuum_enabled = off)`
  for (const n of opts.sizes) {
    await resetOutbox(url)
    await exec(url, noAutovacuum)
    await loadOutboxBacklog(url, n)
    record(await measureClaim(url, `fresh, ${n.toLocaleString('en')} rows, analysed`))
  }
  // Never analysed.
  await resetOutbox(url)
  await exec(url, noAutovacuum)
  await loadOutboxBacklog(url, opts.staleSize, OUTBOX_TABLE, false)
  record(await measureClaim(url, `fresh, ${opts.staleSize.toLocaleString('en')} rows, never analysed`))
  // Statistics from when the table was empty (what autovacuum leaves in a drained outbox).
  await resetOutbox(url)
  await exec(url, noAutovacuum, `ANALYZE ${OUTBOX_TABLE}`)
  await loadOutboxBacklog(url, opts.staleSize, OUTBOX_TABLE, false)
  record(
    await measureClaim(url, `${opts.staleSize.toLocaleString('en')} rows, statistics from the empty table`),
  )

  // Dead tuples: drain a large backlog (scenario 6 measures the relay's memory meanwhile).
  await resetOutbox(url)
  await exec(url, noAutovacuum)
  await loadOutboxBacklog(url, opts.deadSize)
  log(`  draining ${opts.deadSize.toLocaleString('en')} rows with a default relay (memory scenario)...`)
  // The relay runs as bundled plain JavaScript (no tsx loader in the process), as in production.
  const script = await bundle(
    fileURLToPath(new URL('../memory-child.ts', import.meta.url)),
    '/tmp/outboxkit-bench/memory-child.mjs',
  )
  const out = await runChild<DrainResult>(
    { kind: 'drain-outboxkit', url, driver: 'pg', count: opts.deadSize, relay: RELAY_DEFAULTS },
    { script },
  )
  const memory: MemoryResult = {
    messages: out.result.messages,
    relay: 'outboxkit (pg), defaults',
    peakRssMiB: out.maxRssMiB,
    sampledPeakRssMiB: out.sampledPeakRssMiB,
    baselineRssMiB: out.baselineRssMiB,
    perSecond: round(out.result.perSecond, 0),
    seconds: round(out.result.seconds, 1),
    rssSamples: out.rssSamples.filter((_, i) => i % 10 === 0),
  }
  log(
    `  memory: peak RSS ${memory.peakRssMiB} MiB (baseline ${memory.baselineRssMiB} MiB), ${memory.perSecond} msg/s`,
  )
  await loadOutboxBacklog(url, 10_000)
  record(
    await measureClaim(
      url,
      `10,000 rows after ${opts.deadSize.toLocaleString('en')} delivered and deleted (no vacuum)`,
    ),
  )
  await exec(url, `VACUUM ${OUTBOX_TABLE}`)
  record(await measureClaim(url, `same, after VACUUM`))

  // What autovacuum would have done: its thresholds for this table on the server's settings.
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const { rows } = await client.query(
    `SELECT name, setting FROM pg_settings WHERE name IN ('autovacuum_naptime', 'autovacuum_vacuum_threshold',
      'autovacuum_vacuum_scale_factor', 'autovacuum_vacuum_insert_threshold', 'autovacuum_vacuum_insert_scale_factor',
      'autovacuum_analyze_threshold', 'autovacuum_analyze_scale_factor', 'autovacuum_vacuum_cost_delay', 'autovacuum_vacuum_cost_limit')`,
  )
  await client.end()
  const autovacuum = Object.fromEntries(rows.map((r) => [r.name, r.setting]))
  return { claims, memory, autovacuum }
}
