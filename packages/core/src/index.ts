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
  prepareMessagesSync,
} from './message.js'
export {
  createMysqlBackend,
  type MysqlExecutor,
  type MysqlQuery,
  type MysqlResult,
  toMysqlOutboxError,
} from './mysql-backend.js'
export {
  asMysql2Connection,
  canQueueMysql2Commands,
  isMariaDbConnection,
  type Mysql2Command,
  type Mysql2Connection,
  type Mysql2QueryCallback,
  type Mysql2QueryOptions,
  type Mysql2SendOptions,
  mysql2ConnectionState,
  mysqlStatusInTransaction,
  sendMysql2Statement,
  toMysqlResult,
} from './mysql2-connection.js'
export { createPostgresBackend, type PostgresExecutor, statementName } from './postgres-backend.js'
export {
  createMysqlPublisher,
  type MysqlPublisherSpec,
  type MysqlStatement,
  writeMysqlMessages,
} from './publish-mysql.js'
export {
  isPostgresPublishRefused,
  type PostgresPublishOptions,
  type PostgresPublishStatement,
  postgresPublishStatement,
  readPostgresPublishResult,
} from './publish-postgres.js'
export {
  createSqlitePublisher,
  readSqlitePublishResult,
  type SqlitePublisherSpec,
  type SqliteRows,
  type SqliteStatement,
  sqliteDedupStatement,
  sqlitePublishStatement,
} from './publish-sqlite.js'
export {
  createPostgresPublisher,
  type PostgresPublisherSpec,
  type Publisher,
  type PublishFn,
  type PublishManyFn,
  routePublisher,
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
export { type OutboxDialect, outboxDdl } from './sql/ddl.js'
export {
  MARIADB_TRANSACTION_GUARD,
  MYSQL_MAX_ROWS_PER_INSERT,
  type MysqlInsertOptions,
  type MysqlOutboxNames,
  type MysqlStatements,
  mysqlOutboxDdl,
  mysqlOutboxNames,
  mysqlQualifiedTable,
  mysqlStatements,
  quoteMysqlIdent,
} from './sql/mysql.js'
export {
  type OutboxIndexNames,
  outboxIndexNames,
  POSTGRES_NOT_IN_TRANSACTION,
  POSTGRES_TRANSACTION_MARKER,
  type PostgresStatements,
  postgresStatements,
  qualifiedTable,
  quoteIdent,
} from './sql/postgres.js'
export { encodeArrayParameters, postgresArrayLiteral, snakeCaseRows } from './sql/postgres-values.js'
export {
  bindSqlite,
  SQLITE_NOW_MS,
  type SqliteSql,
  type SqliteStatements,
  sqliteOutboxDdl,
  sqliteStatements,
} from './sql/sqlite.js'
export { createSqliteBackend, isSqliteBusy, type SqliteExecutor } from './sqlite-backend.js'
export { hasSqliteWakeListeners, listenSqliteWake, wakeSqliteAfterTransaction } from './sqlite-wake.js'
export { formatIssues, type StandardSchemaV1 } from './standard-schema.js'
export { INSTRUMENTATION_SCOPE, metricNames, type RelayTelemetryOptions } from './telemetry.js'
