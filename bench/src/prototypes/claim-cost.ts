// PROTOTYPE measurement: claim statement variants, timed serially on one connection over the same
// backlog, interleaved (one claim of each variant in turn), each claim's rows deleted untimed.
import { fileURLToPath } from 'node:url'
import { parseTableName, postgresStatements, statementName } from '@outboxkit/core'
import pg from 'pg'
import { seedClaim } from '../contenders/bare-sql.js'
import { loadOutboxBacklog, resetOutbox } from '../contenders/outboxkit.js'
import { benchUrl, ensureBenchDatabase } from '../db.js'
import { median, round } from '../stats.js'
import { OUTBOX_TABLE, TOPIC } from '../workload.js'

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await ensureBenchDatabase()
  const url = benchUrl()
  const batch = Number(process.argv.find((a) => a.startsWith('--batch='))?.slice(8) ?? 200)
  const loops = Number(process.argv.find((a) => a.startsWith('--loops='))?.slice(8) ?? 60)
  const core = postgresStatements(parseTableName(OUTBOX_TABLE)).claim
  const t = OUTBOX_TABLE
  const minimal = `UPDATE ${t} AS o SET state = 'processing', attempts = o.attempts + 1,
  available_at = now() + $3::float8 * interval '1 millisecond'
WHERE o.id = ANY(ARRAY(SELECT id FROM ${t} WHERE state IN ('pending', 'processing') AND available_at <= now() AND topic = ANY($1::text[])
  ORDER BY available_at, id LIMIT $2 FOR UPDATE SKIP LOCKED))
RETURNING o.id::text AS id, o.topic, o.key, o.payload::text AS payload, o.headers::text AS headers, o.attempts,
  o.state, (extract(epoch FROM o.created_at) * 1000)::float8 AS created_ms, o.last_error`
  const idsOnly = `UPDATE ${t} AS o SET state = 'processing', attempts = o.attempts + 1,
  available_at = now() + $3::float8 * interval '1 millisecond'
WHERE o.id = ANY(ARRAY(SELECT id FROM ${t} WHERE state IN ('pending', 'processing') AND available_at <= now() AND topic = ANY($1::text[])
  ORDER BY available_at, id LIMIT $2 FOR UPDATE SKIP LOCKED))
RETURNING o.id::text AS id`
  const variants: [string, string, (n: number) => unknown[]][] = [
    ['core', core, (n) => [[TOPIC], n, 30_000, 10]],
    ['no CASE (same RETURNING)', minimal, (n) => [[TOPIC], n, 30_000]],
    ['no CASE, RETURNING id only', idsOnly, (n) => [[TOPIC], n, 30_000]],
    ['seed (bare SQL)', seedClaim(t), (n) => [[TOPIC], n, 30]],
  ]
  await resetOutbox(url)
  await loadOutboxBacklog(url, batch * loops * variants.length + 1000)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const times = new Map<string, number[]>()
  for (let i = 0; i < loops; i++) {
    for (const [name, text, params] of variants) {
      const t0 = performance.now()
      const { rows } = await client.query({ name: statementName('v', text), text, values: params(batch) })
      const dt = performance.now() - t0
      if (i > 1) times.set(name, [...(times.get(name) ?? []), dt])
      await client.query(`DELETE FROM ${t} WHERE id = ANY($1::uuid[])`, [rows.map((r) => r.id)])
    }
  }
  await client.end()
  for (const [name, list] of times) console.log(`${name}: claim(${batch}) p50 ${round(median(list))} ms`)
}
