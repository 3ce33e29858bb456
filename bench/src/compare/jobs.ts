// The jobs of `pnpm bench:compare`. This module is bundled into each build's tree with
// `@outboxkit/*` and `pg` left as imports (see builds.ts), so a job runs the build it was bundled
// for: keep it to the application API that every compared revision has (`defineOutbox`,
// `createRelay`, `migrate`, `pgBackend`, `publish`, `publishMany`).
import pg from 'pg'
import {
  type BenchRelayOptions,
  type DrainResult,
  drainOutboxkit,
  loadOutboxBacklog,
  resetOutbox,
} from '../contenders/outboxkit.js'
import { type PublishResult, runPublish } from '../scenarios/publish-job.js'
import { ORDERS_DDL, ORDERS_TABLE } from '../workload.js'

/** The packages whose resolution {@link runCompareJob} reports for a `resolve` job. */
export const RESOLVED = ['@outboxkit/core', '@outboxkit/pg', 'pg'] as const

/** A unit of work of the comparison, run in a child process of one build. */
export type CompareJob =
  | { kind: 'resolve' }
  | { kind: 'prepare-drain'; url: string; count: number }
  | { kind: 'prepare-publish'; url: string }
  | { kind: 'drain'; url: string; count: number; relay: BenchRelayOptions }
  | { kind: 'publish'; url: string; producers: number; durationMs: number; warmupMs: number }

/** Runs one comparison job with the build this module was bundled for. */
export async function runCompareJob(
  job: CompareJob,
): Promise<DrainResult | PublishResult | Record<string, string> | null> {
  switch (job.kind) {
    case 'resolve':
      // Where this process's imports resolve: the proof that it runs its own build.
      return Object.fromEntries(RESOLVED.map((name) => [name, import.meta.resolve(name)]))
    case 'prepare-drain':
      // The build's own migrate and publishMany make the table and the backlog it drains.
      await resetOutbox(job.url)
      await loadOutboxBacklog(job.url, job.count)
      return null
    case 'prepare-publish': {
      const client = new pg.Client({ connectionString: job.url })
      await client.connect()
      try {
        await client.query(`DROP TABLE IF EXISTS ${ORDERS_TABLE}`)
        await client.query(ORDERS_DDL)
      } finally {
        await client.end()
      }
      await resetOutbox(job.url)
      return null
    }
    case 'drain':
      return drainOutboxkit({ url: job.url, driver: 'pg', count: job.count, relay: job.relay })
    case 'publish':
      // outboxkit's defaults (notify: true), the pg adapter, business row + publish in one transaction.
      return runPublish({ ...job, variant: 'outboxkit-notify' })
    default:
      throw new Error(`bench:compare: unknown job ${JSON.stringify(job)}`)
  }
}
