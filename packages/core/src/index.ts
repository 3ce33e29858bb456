export { migrate, type PurgeOptions, purge, type RedriveOptions, redrive } from './admin.js'
export {
  type BlockedKey,
  type DeadMessage,
  type DiscardOptions,
  discard,
  type ListBlockedKeysOptions,
  type ListDeadOptions,
  listBlockedKeys,
  listDead,
  type OutboxStats,
  type OutboxStatsOptions,
  outboxStats,
  summarizeStats,
  type TopicStats,
} from './admin-queries.js'
export type {
  BlockedKeyRow,
  BlockedKeysRequest,
  ClaimedRow,
  ClaimRequest,
  DeadRow,
  DiscardRequest,
  ExtendLeaseRequest,
  ListDeadRequest,
  OutboxBackend,
  OutboxState,
  PurgeRequest,
  RedriveRequest,
  Settlement,
  SettleRequest,
  StatsRequest,
  StatsRow,
  WakeHandlers,
  WakeSubscription,
} from './backend.js'
export {
  assertOutbox,
  type DefineOutboxOptions,
  defineOutbox,
  describe,
  type HandlerPayload,
  type OrderedTopicOptions,
  type Outbox,
  type PublishPayload,
  parseTableName,
  type TableRef,
  type TopicName,
  type TopicSchemas,
} from './define-outbox.js'
export {
  isOutboxError,
  OutboxError,
  type OutboxErrorCode,
  type OutboxErrorOptions,
  toOutboxError,
} from './errors.js'
export type { Logger, LogLevel, LogMethod } from './logger.js'
export {
  assertMessageArray,
  encodeJson,
  type MessageOptions,
  type PreparedMessage,
  type PublishMessage,
  type PublishResult,
  prepareMessages,
} from './message.js'
export { createPostgresBackend, type PostgresExecutor, statementName } from './postgres-backend.js'
export {
  isPostgresPublishRefused,
  type PostgresPublishOptions,
  type PostgresPublishStatement,
  postgresPublishStatement,
  readPostgresPublishResult,
} from './publish-postgres.js'
export {
  createPostgresPublisher,
  type PostgresPublisherSpec,
  type PublishFn,
  type PublishManyFn,
} from './publisher.js'
export {
  createRelay,
  type DeadLetterReason,
  type DeliveredMessage,
  type Handler,
  type HandlerContext,
  type Handlers,
  type Relay,
  type RelayEvents,
  type RelayOptions,
  type RelayStats,
  type StopOptions,
} from './relay.js'
export {
  backoffDelay,
  Cancel,
  type ResolvedRetryPolicy,
  Retry,
  type RetryOptions,
  type RetryPolicy,
  resolveRetryPolicy,
} from './retry.js'
export {
  type OutboxIndexNames,
  outboxDdl,
  outboxIndexNames,
  POSTGRES_NOT_IN_TRANSACTION,
  POSTGRES_TRANSACTION_MARKER,
  type PostgresStatements,
  postgresStatements,
  qualifiedTable,
  quoteIdent,
} from './sql/postgres.js'
export { encodeArrayParameters, postgresArrayLiteral, snakeCaseRows } from './sql/postgres-values.js'
export { formatIssues, type StandardSchemaV1 } from './standard-schema.js'
export { INSTRUMENTATION_SCOPE, metricNames, type RelayTelemetryOptions } from './telemetry.js'
