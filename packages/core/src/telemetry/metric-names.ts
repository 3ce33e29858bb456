/** The instrumentation scope of outboxkit's spans and metrics. */
export const INSTRUMENTATION_SCOPE = '@outboxkit/core'

/**
 * The names of the metrics outboxkit records through `@opentelemetry/api` (Prometheus exporters
 * turn dots into `_` and add the unit, e.g. `outboxkit_handler_duration_seconds`).
 */
export const metricNames = {
  /** Counter: messages written by `publish`/`publishMany` (not dedup no-ops). By topic. */
  published: 'outboxkit.messages.published',
  /** Counter: handler successes. By topic. */
  delivered: 'outboxkit.messages.delivered',
  /** Counter: handler failures that were rescheduled. By topic. */
  retried: 'outboxkit.messages.retried',
  /** Counter: dead letters. By topic and reason. */
  deadLettered: 'outboxkit.messages.dead_lettered',
  /** Histogram, seconds: handler run time. By topic. */
  handlerDuration: 'outboxkit.handler.duration',
  /** Histogram, seconds: end-to-end delay from `created_at` to a successful delivery. By topic. */
  deliveryDelay: 'outboxkit.delivery.delay',
  /** Gauge: rows by topic and state (pending, processing, dead; delivered with keepDelivered). */
  queueDepth: 'outboxkit.queue.depth',
  /** Gauge, seconds: age of the oldest pending or processing message (0 when none). */
  oldestPendingAge: 'outboxkit.queue.oldest_pending.age',
  /** Gauge, seconds: how late the oldest due message is (0 when none is due). */
  oldestDueLag: 'outboxkit.queue.oldest_due.lag',
  /** Gauge, bytes: WAL the outbox's replication slot retains (`transport: 'wal'`, docs/wal.md). */
  slotRetained: 'outboxkit.slot.retained',
  /** Gauge, bytes: WAL written since the slot's last confirmation (`transport: 'wal'`). */
  slotLag: 'outboxkit.slot.lag',
} as const
