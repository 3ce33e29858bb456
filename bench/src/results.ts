import type { BenchConfig } from './config.js'
import type { MachineInfo } from './machine.js'
import type { BackendsResult } from './scenarios/backends.js'
import type { DrainRow } from './scenarios/drain.js'
import type { ForwardResult } from './scenarios/forward.js'
import type { ClaimCost, MemoryResult } from './scenarios/growth.js'
import type { InboxResult } from './scenarios/inbox.js'
import type { LatencyResult } from './scenarios/latency-job.js'
import type { MixedResult } from './scenarios/mixed.js'
import type { OrderingResult } from './scenarios/ordering.js'
import type { PoolerResult } from './scenarios/pooler.js'
import type { PublishRow } from './scenarios/publish.js'
import type { WalBenchResult } from './scenarios/wal.js'

/** Everything one bench run writes to bench/results/latest.json. */
export interface BenchResults {
  meta: {
    mode: 'quick' | 'full'
    startedAt: string
    finishedAt: string
    database: string
    machine: MachineInfo
    loadAverageStart: [number, number, number]
    loadAverageEnd: [number, number, number]
    config: BenchConfig
    scenarios: string[]
  }
  drain?: DrainRow[]
  publish?: PublishRow[]
  latency?: LatencyResult[]
  mixed?: MixedResult[]
  growth?: { claims: ClaimCost[]; autovacuumSettings: Record<string, unknown> }
  memory?: MemoryResult
  ordering?: OrderingResult
  backends?: BackendsResult
  pooler?: PoolerResult
  forward?: ForwardResult
  /** The WAL transport side by side with the table (`--only=wal`). */
  wal?: WalBenchResult
  inbox?: InboxResult[]
}
