// The read side of admin, in one import: stats (stats.ts), dead letters (dead-letters.ts) and
// blocked keys (blocked-keys.ts). index.ts and adapter.ts import those files directly; the relay
// (relay/queue-gauges.ts) imports summarizeStats from here.

export {
  type BlockedKey,
  type ListBlockedKeysOptions,
  listBlockedKeys,
} from './blocked-keys.js'
export {
  type DeadMessage,
  type DiscardOptions,
  discard,
  type ListDeadOptions,
  listDead,
} from './dead-letters.js'
export {
  type OutboxStats,
  type OutboxStatsOptions,
  outboxStats,
  summarizeStats,
  type TopicStats,
} from './stats.js'
