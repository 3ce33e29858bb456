import type { LatencyContender } from './jobs.js'

/** Sizes and durations of one bench run. */
export interface BenchConfig {
  mode: 'quick' | 'full'
  drainBacklog: number
  drainRounds: number
  publishProducers: number
  publishDurationMs: number
  publishWarmupMs: number
  publishRounds: number
  latencyRates: number[]
  latencyContenders: LatencyContender[]
  latencyDurationMs: number
  latencyProducers: number
  mixedDurationMs: number
  mixedProducers: number
  growthSizes: number[]
  staleSize: number
  deadSize: number
  /** Scenario 7 (ordering): backlog spread over `orderingKeys` keys, drained with each relay count. */
  orderingBacklog: number
  orderingKeys: number
  orderingRelays: number[]
  orderingDrainRounds: number
  orderingProducers: number
  orderingPublishDurationMs: number
  orderingPublishWarmupMs: number
  orderingPublishRounds: number
  /** Scenario 8 (backends): the drain backlog on PostgreSQL, MySQL/MariaDB and SQLite, and its rounds. */
  backendsBacklog: number
  backendsRounds: number
  /** Scenario 9 (pooler): interleaved rounds, publish window and warm-up, drain backlog. */
  poolerRounds: number
  poolerPublishDurationMs: number
  poolerPublishWarmupMs: number
  poolerBacklog: number
  /** Scenario 10 (forward): messages per contender and broker, and rounds. */
  forwardCount: number
  forwardRounds: number
}

/** `pnpm bench --quick` (a few minutes) or the full run. */
export function benchConfig(quick: boolean): BenchConfig {
  return quick
    ? {
        mode: 'quick',
        drainBacklog: 20_000,
        drainRounds: 1,
        publishProducers: 16,
        publishDurationMs: 3_000,
        publishWarmupMs: 500,
        publishRounds: 2,
        latencyRates: [1_000, 5_000],
        latencyContenders: ['outboxkit', 'graphile-best'],
        latencyDurationMs: 5_000,
        latencyProducers: 16,
        mixedDurationMs: 15_000,
        mixedProducers: 16,
        growthSizes: [10_000, 100_000],
        staleSize: 100_000,
        deadSize: 100_000,
        orderingBacklog: 10_000,
        orderingKeys: 1_000,
        orderingRelays: [1, 2],
        orderingDrainRounds: 1,
        orderingProducers: 16,
        orderingPublishDurationMs: 1_500,
        orderingPublishWarmupMs: 300,
        orderingPublishRounds: 1,
        backendsBacklog: 10_000,
        backendsRounds: 1,
        poolerRounds: 3,
        poolerPublishDurationMs: 3_000,
        poolerPublishWarmupMs: 500,
        poolerBacklog: 20_000,
        forwardCount: 20_000,
        forwardRounds: 1,
      }
    : {
        mode: 'full',
        drainBacklog: 100_000,
        drainRounds: 3,
        publishProducers: 16,
        publishDurationMs: 15_000,
        publishWarmupMs: 2_000,
        publishRounds: 3,
        latencyRates: [1_000, 5_000],
        latencyContenders: ['outboxkit', 'graphile-best', 'graphile-defaults'],
        latencyDurationMs: 15_000,
        latencyProducers: 16,
        mixedDurationMs: 60_000,
        mixedProducers: 16,
        growthSizes: [10_000, 100_000, 1_000_000],
        staleSize: 100_000,
        deadSize: 1_000_000,
        orderingBacklog: 30_000,
        orderingKeys: 1_000,
        orderingRelays: [1, 2],
        orderingDrainRounds: 5,
        orderingProducers: 16,
        orderingPublishDurationMs: 10_000,
        orderingPublishWarmupMs: 1_000,
        orderingPublishRounds: 3,
        backendsBacklog: 50_000,
        backendsRounds: 3,
        poolerRounds: 5,
        poolerPublishDurationMs: 10_000,
        poolerPublishWarmupMs: 1_000,
        poolerBacklog: 50_000,
        forwardCount: 100_000,
        forwardRounds: 2,
      }
}
