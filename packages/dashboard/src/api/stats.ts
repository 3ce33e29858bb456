import { listBlockedKeys, outboxStats } from '@outboxkit/core'
import { json } from '../http.js'
import type { DashboardConfig } from '../options.js'
import { blockedJson } from './serialize.js'

/**
 * `GET /api/stats`: counts per topic and state with the oldest ages, the relay's lag
 * (`oldestDueLagMs`), and whether this request may act (`writable`).
 */
export async function statsRoute(config: DashboardConfig, writable: boolean): Promise<Response> {
  const stats = await outboxStats(config.outbox, config.backend)
  return json(200, { table: config.outbox.table.display, ...stats, writable, at: new Date().toISOString() })
}

/** `GET /api/blocked`: keys of ordered topics held back by a dead (or retrying) head, up to 100. */
export async function blockedRoute(config: DashboardConfig): Promise<Response> {
  if (typeof config.backend.blockedKeys !== 'function') return json(200, { keys: [], supported: false })
  const keys = await listBlockedKeys(config.outbox, config.backend, { includeRetrying: true, limit: 100 })
  return json(200, { keys: keys.map(blockedJson), supported: true })
}
