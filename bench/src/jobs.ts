import type { GraphileSettings } from './contenders/graphile.js'
import type { BenchRelayOptions, OutboxkitDriver } from './contenders/outboxkit.js'
import type { BossSettings } from './contenders/pg-boss.js'
import type { BackendsJobSpec } from './scenarios/backends-job.js'
import type { ForwardJobSpec } from './scenarios/forward-job.js'
import type { OrderingJobSpec } from './scenarios/ordering-job.js'

/** Every unit of work the bench runs in a child process. Modules load lazily per kind. */
export type Job =
  | {
      kind: 'drain-outboxkit'
      url: string
      driver: OutboxkitDriver
      count: number
      relay: BenchRelayOptions
      poolMax?: number
      /** pgBackend's `preparedStatements` (pg only; unset: the backend's default). */
      preparedStatements?: boolean
      profileFile?: string
    }
  | { kind: 'drain-graphile'; url: string; count: number; settings: GraphileSettings }
  | { kind: 'drain-pg-boss'; url: string; count: number; settings: BossSettings }
  | { kind: 'drain-bare'; url: string; count: number; batch: number; workers: number }
  | {
      kind: 'publish'
      url: string
      variant: PublishVariant
      producers: number
      durationMs: number
      warmupMs: number
      profileFile?: string
    }
  | {
      kind: 'latency'
      url: string
      contender: LatencyContender
      rate: number
      durationMs: number
      producers: number
    }
  | { kind: 'relay'; url: string; driver: OutboxkitDriver; relay: BenchRelayOptions; reportEveryMs: number }
  | {
      kind: 'produce'
      url: string
      producers: number
      durationMs: number
      notify: boolean
      reportEveryMs: number
    }
  | { kind: 'ordering'; spec: OrderingJobSpec }
  | { kind: 'backends'; spec: BackendsJobSpec }
  | { kind: 'forward'; spec: ForwardJobSpec }

/** The transaction shapes of the publish scenario. */
export type PublishVariant =
  | 'business-only'
  | 'outboxkit-notify'
  | 'outboxkit-notify-named'
  | 'outboxkit-no-notify'
  | 'graphile-add-job'
  | 'pg-boss-send'
  | 'pjs-business-only'
  | 'pjs-outboxkit-notify'
  | 'pjs-outboxkit-no-notify'
  | 'ref-extra-select'
  | 'ref-second-row'
  | 'ref-raw-statement'

/** The consumers of the latency scenario. */
export type LatencyContender = 'outboxkit' | 'outboxkit-no-notify' | 'graphile-best' | 'graphile-defaults'

/** Runs one job and returns its JSON-serialisable result. */
export async function runJob(job: Job, progress: (data: unknown) => void): Promise<unknown> {
  switch (job.kind) {
    case 'drain-outboxkit':
      return (await import('./contenders/outboxkit.js')).drainOutboxkit(job)
    case 'drain-graphile':
      return (await import('./contenders/graphile.js')).drainGraphile(job)
    case 'drain-pg-boss':
      return (await import('./contenders/pg-boss.js')).drainBoss(job)
    case 'drain-bare':
      return (await import('./contenders/bare-sql.js')).drainBareSql(job)
    case 'publish':
      return (await import('./scenarios/publish-job.js')).runPublish(job)
    case 'latency':
      return (await import('./scenarios/latency-job.js')).runLatency(job)
    case 'relay':
      return (await import('./scenarios/mixed-job.js')).runRelay(job, progress)
    case 'produce':
      return (await import('./scenarios/mixed-job.js')).runProducers(job, progress)
    case 'ordering':
      return (await import('./scenarios/ordering-job.js')).runOrderingJob(job.spec, progress)
    case 'backends':
      return (await import('./scenarios/backends-job.js')).runBackendsJob(job.spec, progress)
    case 'forward':
      return (await import('./scenarios/forward-job.js')).runForwardJob(job.spec)
    default:
      throw new Error(`bench: unknown job ${JSON.stringify(job)}`)
  }
}
