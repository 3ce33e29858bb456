// @outboxkit/core: what an application imports (README, CONTRACT). Adapter authors also import
// '@outboxkit/core/adapter' (publisher factories, dialect backends, statements, driver helpers).

export { type BlockedKey, type ListBlockedKeysOptions, listBlockedKeys } from './admin/blocked-keys.js'
export { migrate, type PurgeOptions, purge, type RedriveOptions, redrive } from './admin/commands.js'
export { type CountDeadOptions, countDead } from './admin/count-dead.js'
export {
  type DeadMessage,
  type DiscardOptions,
  discard,
  type ListDeadOptions,
  listDead,
} from './admin/dead-letters.js'
export {
  INBOX_DEFAULT_RETENTION_MS,
  type InboxStats,
  inboxStats,
  type PurgeInboxOptions,
} from './admin/inbox.js'
export { type OutboxStats, type OutboxStatsOptions, outboxStats, type TopicStats } from './admin/stats.js'
export { inboxDdl, outboxDdl } from './dialect/ddl.js'
export {
  type DefineInboxOptions,
  defineInbox,
  type Inbox,
  type InboxMessage,
  isInbox,
  type ProcessOnceResult,
} from './outbox/define-inbox.js'
export {
  type DefineOutboxOptions,
  defineOutbox,
  type HandlerPayload,
  type OrderedTopicOptions,
  type Outbox,
  type PublishPayload,
  type TableRef,
  type TopicName,
  type TopicSchemas,
} from './outbox/define-outbox.js'
export type { OutboxDialect } from './outbox/dialect.js'
export { isOutboxError, OutboxError, type OutboxErrorCode, type OutboxErrorOptions } from './outbox/errors.js'
export type { MessageOptions, PublishMessage, PublishResult } from './outbox/message.js'
export type { StandardSchemaV1 } from './outbox/standard-schema.js'
export type { OutboxBackend, OutboxState } from './protocol/backend.js'
export type { InboxHandler } from './protocol/inbox-handler.js'
export type { ProcessOnceFn } from './protocol/inbox-pipeline.js'
export type { PublishFn, PublishManyFn } from './protocol/publisher.js'
export type { OutboxWal, SlotStats } from './protocol/wal.js'
export { createRelay } from './relay/create-relay.js'
export type {
  DeadLetterReason,
  DeliveredMessage,
  Handler,
  HandlerContext,
  Handlers,
} from './relay/handler-types.js'
export type { RelayState } from './relay/lifecycle.js'
export type { RelayTelemetryOptions } from './relay/relay-telemetry.js'
export type { Relay, RelayEvents, RelayOptions, RelayStats, StopOptions } from './relay/relay-types.js'
export { Cancel, Retry, type RetryOptions, type RetryPolicy } from './relay/retry.js'
export type { Logger, LogLevel, LogMethod } from './telemetry/logger.js'
export { INSTRUMENTATION_SCOPE, metricNames } from './telemetry/metric-names.js'
