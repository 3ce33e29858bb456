// PROTOTYPE: drains with the prototype relay (prototypes/relay.ts) and an optional claim statement.
import { defineOutbox, parseTableName, postgresStatements } from '@outboxkit/core'
import { countStatements, type DrainResult, makeBackend } from '../contenders/outboxkit.js'
import type { Job } from '../jobs.js'
import { withProfile } from '../profiler.js'
import { waitUntil } from '../stats.js'
import { OUTBOX_TABLE, TOPIC } from '../workload.js'
import { anyArrayClaim, protoPgBackend } from './claim-sql.js'
import { createRelay } from './relay.js'

/** Drains the backlog with the prototype relay; timed like the core drain. */
export async function drainProto(job: Extract<Job, { kind: 'drain-proto' }>): Promise<DrainResult> {
  const outbox = defineOutbox({ table: OUTBOX_TABLE })
  const inner =
    job.claim === 'any-array' || job.fastSettle
      ? protoPgBackend(
          job.url,
          job.claim === 'any-array'
            ? anyArrayClaim(OUTBOX_TABLE)
            : postgresStatements(parseTableName(OUTBOX_TABLE)).claim,
          10,
          job.fastSettle,
        )
      : await makeBackend('pg', job.url)
  const counted = countStatements(inner)
  const relay = createRelay(outbox, {
    backend: counted.backend,
    handlers: { [TOPIC]: () => {} },
    ...job.relay,
    proto: job.proto,
  })
  await counted.backend.claim({
    table: outbox.table,
    topics: ['warm-up'],
    limit: 1,
    leaseMs: 1,
    maxAttempts: 1,
  })
  counted.reset()
  return withProfile(job.profileFile, async () => {
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    await relay.start()
    await waitUntil('the prototype drain', () => relay.stats.delivered >= job.count, 600_000, 2)
    const seconds = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    await relay.stop()
    return {
      messages: relay.stats.delivered,
      seconds,
      perSecond: relay.stats.delivered / seconds,
      cpuUserMs: cpu.user / 1000,
      cpuSystemMs: cpu.system / 1000,
      statements: counted.counts,
    }
  })
}
