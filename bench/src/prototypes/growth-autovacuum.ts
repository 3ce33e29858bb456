// Claim cost after a large drain when autovacuum runs with the storage parameters `migrate` now
// sets (the main bench's growth scenario holds autovacuum off on the table to measure the worst
// case). `tsx src/prototypes/growth-autovacuum.ts --dead=1000000`
import { fileURLToPath } from 'node:url'
import { createRelay, defineOutbox } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import pg from 'pg'
import { loadOutboxBacklog, resetOutbox } from '../contenders/outboxkit.js'
import { benchUrl, ensureBenchDatabase } from '../db.js'
import { measureClaim } from '../scenarios/growth.js'
import { round, sleep, waitUntil } from '../stats.js'
import { OUTBOX_TABLE, TOPIC } from '../workload.js'

async function one<T>(url: string, sql: string, params: unknown[] = []): Promise<T> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return (await c.query(sql, params)).rows[0] as T
  } finally {
    await c.end()
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await ensureBenchDatabase()
  const url = benchUrl()
  const dead = Number(process.argv.find((a) => a.startsWith('--dead='))?.slice(7) ?? 1_000_000)
  const out: string[] = []
  const log = (line: string) => {
    out.push(line)
    console.log(line)
  }
  await resetOutbox(url)
  await loadOutboxBacklog(url, 10_000)
  const fresh = await measureClaim(url, 'fresh, 10,000 rows, analysed')
  log(`fresh 10k: claim(100) p50 ${fresh.claimP50Ms} ms, ${fresh.rowsPerSecond} rows/s`)

  await resetOutbox(url)
  const { reloptions } = await one<{ reloptions: string[] }>(
    url,
    'SELECT reloptions FROM pg_class WHERE oid = $1::regclass',
    [OUTBOX_TABLE],
  )
  log(`table storage parameters (from migrate): ${reloptions.join(', ')}`)
  await loadOutboxBacklog(url, dead)
  const backend = pgBackend({ connectionString: url })
  const relay = createRelay(defineOutbox({ table: OUTBOX_TABLE }), {
    backend,
    handlers: { [TOPIC]: () => {} },
  })
  const t0 = performance.now()
  await relay.start()
  await waitUntil('the drain', () => relay.stats.delivered >= dead, 1_800_000, 20)
  const drainS = (performance.now() - t0) / 1000
  await relay.stop()
  const drainedAt = await one<{ now: Date }>(url, 'SELECT now()')
  log(`drained ${dead.toLocaleString('en')} with a default relay in ${round(drainS, 1)} s`)
  await loadOutboxBacklog(url, 10_000, OUTBOX_TABLE, false)
  const before = await measureClaim(url, 'right after the drain')
  log(
    `right after the drain (dead tuples ${before.deadTuples}): claim(100) p50 ${before.claimP50Ms} ms, ${before.rowsPerSecond} rows/s = ${round(before.rowsPerSecond / fresh.rowsPerSecond, 2)} × fresh`,
  )
  // Wait for autovacuum (it wakes every autovacuum_naptime) to visit the table after the drain.
  const w0 = performance.now()
  let vacuumed = false
  for (let i = 0; i < 150 && !vacuumed; i++) {
    const r = await one<{ last: Date | null }>(
      url,
      'SELECT greatest(last_autovacuum, last_vacuum) AS last FROM pg_stat_user_tables WHERE relid = $1::regclass',
      [OUTBOX_TABLE],
    )
    vacuumed = r.last !== null && r.last > drainedAt.now
    if (!vacuumed) await sleep(1_000)
  }
  const waitedS = round((performance.now() - w0) / 1000, 0)
  const after = await measureClaim(url, 'after autovacuum')
  log(
    `${vacuumed ? `autovacuum ran ${waitedS} s after the drain` : `no autovacuum within ${waitedS} s`} (dead tuples now ${after.deadTuples}): claim(100) p50 ${after.claimP50Ms} ms, ${after.rowsPerSecond} rows/s = ${round(after.rowsPerSecond / fresh.rowsPerSecond, 2)} × fresh`,
  )
}
