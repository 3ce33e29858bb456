// PROTOTYPE measurement: the server-side cost of core's claim and settle statements (and
// variants), each run serially on one connection over a fresh backlog. `tsx src/prototypes/statement-cost.ts`
import { fileURLToPath } from 'node:url'
import { parseTableName, postgresStatements, statementName } from '@outboxkit/core'
import pg from 'pg'
import { loadOutboxBacklog, resetOutbox } from '../contenders/outboxkit.js'
import { benchUrl, ensureBenchDatabase } from '../db.js'
import { median, round } from '../stats.js'
import { OUTBOX_TABLE, TOPIC } from '../workload.js'
import { fastDeleteSettle } from './claim-sql.js'

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await ensureBenchDatabase()
  const url = benchUrl()
  const batch = Number(process.argv.find((a) => a.startsWith('--batch='))?.slice(8) ?? 200)
  const loops = Number(process.argv.find((a) => a.startsWith('--loops='))?.slice(8) ?? 100)
  const sql = postgresStatements(parseTableName(OUTBOX_TABLE))
  const fast = fastDeleteSettle(OUTBOX_TABLE)
  for (const variant of [
    'core settle',
    'core delivered settle',
    'delete settle',
    'core settle',
    'core delivered settle',
    'delete settle',
  ]) {
    await resetOutbox(url)
    await loadOutboxBacklog(url, batch * loops)
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    const claims: number[] = []
    const settles: number[] = []
    for (let i = 0; i < loops; i++) {
      let t = performance.now()
      const { rows } = await client.query({
        name: statementName('c', sql.claim),
        text: sql.claim,
        values: [[TOPIC], batch, 30_000, 10],
      })
      claims.push(performance.now() - t)
      const ids = rows.map((r) => r.id)
      const attempts = rows.map((r) => r.attempts)
      t = performance.now()
      if (variant === 'core settle') {
        await client.query({
          name: statementName('s', sql.settle),
          text: sql.settle,
          values: [ids, attempts, ids.map(() => 'delivered'), ids.map(() => 0), ids.map(() => null), false],
        })
      } else if (variant === 'core delivered settle') {
        await client.query({
          name: statementName('cd', sql.settleDelivered),
          text: sql.settleDelivered,
          values: [`{${ids.join(',')}}`, `{${attempts.join(',')}}`],
        })
      } else {
        await client.query({ name: statementName('d', fast), text: fast, values: [ids, attempts] })
      }
      settles.push(performance.now() - t)
    }
    await client.end()
    console.log(
      `${variant}: claim(${batch}) p50 ${round(median(claims))} ms, settle(${batch}) p50 ${round(median(settles))} ms`,
    )
  }
}
