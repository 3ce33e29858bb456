import pg from 'pg'
import { OUTBOX_TABLE } from '../workload.js'
import type { DrainResult } from './outboxkit.js'

/**
 * The seed's claim statement, verbatim in shape: UPDATE ... WHERE id IN (SELECT ... FOR UPDATE
 * SKIP LOCKED LIMIT n) RETURNING the columns a handler needs.
 */
export function seedClaim(table = OUTBOX_TABLE): string {
  return `UPDATE ${table} SET state = 'processing',
    available_at = NOW() + make_interval(secs => $3),
    attempts = attempts + 1
WHERE id IN (
    SELECT id FROM ${table}
    WHERE topic = ANY($1)
      AND (state = 'pending' OR state = 'processing')
      AND available_at <= NOW()
    ORDER BY available_at, id
    FOR UPDATE SKIP LOCKED
    LIMIT $2
)
RETURNING id, topic, key, payload, headers, attempts, created_at`
}

/**
 * The bare-SQL limit: `workers` loops, each claiming `batch` rows with the seed's statement and
 * deleting them with one `DELETE ... WHERE id = ANY($1)`, no library, no handler bookkeeping.
 */
export async function drainBareSql(spec: {
  url: string
  count: number
  batch: number
  workers: number
  table?: string
}): Promise<DrainResult> {
  const table = spec.table ?? OUTBOX_TABLE
  const pool = new pg.Pool({ connectionString: spec.url, max: spec.workers })
  pool.on('error', () => {})
  const claim = seedClaim(table)
  const del = `DELETE FROM ${table} WHERE id = ANY($1::uuid[])`
  // Connect every client before the clock starts, like the other contenders' warm pools.
  await Promise.all(Array.from({ length: spec.workers }, () => pool.query('SELECT 1')))
  let done = 0
  let statements = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const worker = async () => {
    const client = await pool.connect()
    try {
      for (;;) {
        const { rows } = await client.query({
          name: 'bare_claim',
          text: claim,
          values: [['order.created'], spec.batch, 30],
        })
        statements++
        if (rows.length === 0) return
        await client.query({ name: 'bare_delete', text: del, values: [rows.map((r) => r.id)] })
        statements++
        done += rows.length
      }
    } finally {
      client.release()
    }
  }
  await Promise.all(Array.from({ length: spec.workers }, worker))
  const seconds = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  await pool.end()
  return {
    messages: done,
    seconds,
    perSecond: done / seconds,
    cpuUserMs: cpu.user / 1000,
    cpuSystemMs: cpu.system / 1000,
    statements: { total: statements },
  }
}
