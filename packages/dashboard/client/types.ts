// The shapes of the JSON API the page reads (see src/api/). Part of the page's script: the
// build joins client/types.ts, client/dom.ts and client/app.ts into one function scope.
interface Config {
  base: string
  writable: boolean
  refreshMs: number
}
interface TopicStats {
  topic: string
  pending: number
  processing: number
  dead: number
  oldestPendingAgeMs: number | null
  oldestDueLagMs: number | null
}
interface SlotStats {
  slot: string
  active: boolean
  retainedBytes: number
  lagBytes: number
  walStatus: string | null
}
interface Stats {
  table: string
  /** `transport: 'wal'` only: the replication slot, `null` when it does not exist. */
  slot?: SlotStats | null
  states: { pending: number; processing: number; dead: number }
  topics: TopicStats[]
  oldestPendingAgeMs: number | null
  oldestDueLagMs: number | null
  writable: boolean
}
interface Dead {
  id: string
  topic: string
  key: string | null
  payload: unknown
  headers: Record<string, string>
  attempts: number
  lastError: string | null
  createdAt: string
  deadAt: string
  traceId: string | null
  cursor: string
}
interface DeadPage {
  messages: Dead[]
  next: string | null
  matching: number | null
  matchingCapped: boolean
}
interface Blocked {
  key: string
  reason: string
  waiting: number
  head: { id: string; topic: string; attempts: number; lastError: string | null; since: string }
}
