import pg from 'pg'
import { runChild } from '../child-runner.js'
import { type BenchRelayOptions, resetOutbox } from '../contenders/outboxkit.js'
import { round, sleep } from '../stats.js'
import { ORDERS_DDL, ORDERS_TABLE, OUTBOX_TABLE } from '../workload.js'

/** Scenario 4's result. */
export interface MixedResult {
  label: string
  notify: boolean
  seconds: number
  committed: number
  delivered: number
  producedPerSecond: number
  deliveredPerSecond: number
  /** [seconds since start, backlog rows (pending + processing), delivered so far by both relays]. */
  timeline: [number, number, number][]
  maxBacklog: number
  finalBacklog: number
  relayCpuMs: number[]
}

/**
 * Scenario 4: 16 closed-loop producers and two relays (separate processes, default settings) at
 * the same time for `durationMs`; the backlog is sampled every second from the table.
 */
export async function runMixedScenario(
  url: string,
  opts: { durationMs: number; producers: number; notify: boolean; relay: BenchRelayOptions; label: string },
  log: (line: string) => void,
): Promise<MixedResult> {
  const admin = new pg.Pool({ connectionString: url, max: 1 })
  await admin.query(`DROP TABLE IF EXISTS ${ORDERS_TABLE}`)
  await admin.query(ORDERS_DDL)
  await resetOutbox(url)
  const delivered = [0, 0]
  const stops: ((m: unknown) => void)[] = []
  const relays = [0, 1].map((i) =>
    runChild<{ delivered: number; cpuMs: number }>(
      { kind: 'relay', url, driver: 'pg', relay: opts.relay, reportEveryMs: 500 },
      {
        onProgress: (p: any) => {
          delivered[i] = p.delivered
        },
        control: (send) => stops.push(send),
      },
    ),
  )
  await sleep(1_000)
  const timeline: [number, number, number][] = []
  const t0 = performance.now()
  const producers = runChild<{ committed: number; seconds: number }>({
    kind: 'produce',
    url,
    producers: opts.producers,
    durationMs: opts.durationMs,
    notify: opts.notify,
    reportEveryMs: 1_000,
  })
  let done = false
  void producers.finally(() => {
    done = true
  })
  while (!done) {
    await sleep(1_000)
    const { rows } = await admin.query(
      `SELECT count(*)::int AS n FROM ${OUTBOX_TABLE} WHERE state IN ('pending', 'processing')`,
    )
    timeline.push([round((performance.now() - t0) / 1000, 1), rows[0].n, delivered[0]! + delivered[1]!])
  }
  const produced = await producers
  // Let the relays finish the tail, bounded, then stop them.
  const tailEnd = Date.now() + 30_000
  for (;;) {
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${OUTBOX_TABLE}`)
    if (rows[0].n === 0 || Date.now() > tailEnd) break
    await sleep(200)
  }
  const finalBacklog = (await admin.query(`SELECT count(*)::int AS n FROM ${OUTBOX_TABLE}`)).rows[0].n
  for (const stop of stops) stop({ type: 'stop' })
  const relayOut = await Promise.all(relays)
  await admin.end()
  const seconds = produced.result.seconds
  const deliveredInWindow = timeline.at(-1)?.[2] ?? 0
  const result: MixedResult = {
    label: opts.label,
    notify: opts.notify,
    seconds: round(seconds, 1),
    committed: produced.result.committed,
    delivered: relayOut.reduce((a, r) => a + r.result.delivered, 0),
    producedPerSecond: round(produced.result.committed / seconds, 0),
    deliveredPerSecond: round(deliveredInWindow / seconds, 0),
    timeline,
    maxBacklog: Math.max(0, ...timeline.map((t) => t[1])),
    finalBacklog,
    relayCpuMs: relayOut.map((r) => round(r.result.cpuMs, 0)),
  }
  log(
    `  ${opts.label}: produced ${result.producedPerSecond}/s, delivered ${result.deliveredPerSecond}/s, max backlog ${result.maxBacklog}, left after tail ${finalBacklog}`,
  )
  return result
}
