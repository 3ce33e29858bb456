import pg from 'pg'
import { runChild } from '../child-runner.js'
import { resetGraphile } from '../contenders/graphile.js'
import { resetOutbox } from '../contenders/outboxkit.js'
import type { LatencyContender } from '../jobs.js'
import { ORDERS_DDL, ORDERS_TABLE } from '../workload.js'
import type { LatencyResult } from './latency-job.js'

/** Scenario 3: open-loop latency per (rate, contender), fresh tables before each run. */
export async function runLatencyScenario(
  url: string,
  opts: { rates: number[]; contenders: LatencyContender[]; durationMs: number; producers: number },
  log: (line: string) => void,
): Promise<LatencyResult[]> {
  const results: LatencyResult[] = []
  for (const rate of opts.rates) {
    for (const contender of opts.contenders) {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      await client.query(`DROP TABLE IF EXISTS ${ORDERS_TABLE}`)
      await client.query(ORDERS_DDL)
      await client.end()
      if (contender.startsWith('outboxkit')) await resetOutbox(url)
      else await resetGraphile(url)
      const out = await runChild<LatencyResult>({
        kind: 'latency',
        url,
        contender,
        rate,
        durationMs: opts.durationMs,
        producers: opts.producers,
      })
      results.push(out.result)
      const r = out.result
      log(
        `  ${rate}/s ${contender}: p50 ${r.p50Ms} ms, p95 ${r.p95Ms} ms, p99 ${r.p99Ms} ms (achieved ${r.achievedRate}/s, delivered ${r.delivered}/${r.messages})`,
      )
    }
  }
  return results
}
