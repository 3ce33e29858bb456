// @outboxkit/core/adapter: for the authors of outboxkit adapters and backends, not for applications.
// The OutboxBackend protocol's requests and rows, the publish pipeline and each dialect's
// publisher factory, backend, statements and driver helpers. Applications import '@outboxkit/core'.

export { summarizeStats } from './admin/stats.js'
export {
  createMysqlBackend,
  type MysqlExecutor,
  type MysqlQuery,
  type MysqlResult,
} from './dialect/mysql/backend.js'
export { toMysqlOutboxError } from './dialect/mysql/errors.js'
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
} from './dialect/mysql/mysql2-connection.js'
export { type ProbedStatementRunner, runProbedMysqlStatement } from './dialect/mysql/probed-statement.js'
export {
  createMysqlPublisher,
  type MysqlPublisherSpec,
  type MysqlStatement,
  writeMysqlMessages,
} from './dialect/mysql/publisher.js'
export { type MysqlInboxStatements, mysqlInboxStatements } from './dialect/mysql/statements/inbox.js'
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
} from './dialect/mysql/statements.js'
export { createPostgresBackend, type PostgresExecutor } from './dialect/postgres/backend.js'
export {
  isPostgresPublishRefused,
  type PostgresPublishOptions,
  type PostgresPublishStatement,
  postgresPublishStatement,
  readPostgresPublishResult,
} from './dialect/postgres/publish-statement.js'
export { createPostgresPublisher, type PostgresPublisherSpec } from './dialect/postgres/publisher.js'
export { statementName } from './dialect/postgres/run.js'
export {
  type PostgresInboxStatements,
  postgresInboxStatements,
} from './dialect/postgres/statements/inbox.js'
export {
  POSTGRES_NOT_IN_TRANSACTION,
  POSTGRES_TRANSACTION_MARKER,
  type PostgresStatements,
  postgresStatements,
} from './dialect/postgres/statements.js'
export {
  encodeArrayParameters,
  postgresArrayLiteral,
  snakeCaseRows,
} from './dialect/postgres/values.js'
export { decodeWalContent, encodeWalContent } from './dialect/postgres/wal/message.js'
export { type WalNames, walNames } from './dialect/postgres/wal/names.js'
export { formatLsn, parseLsn } from './dialect/postgres/wal/pgoutput.js'
export type { ReplicationConnection, ReplicationHandlers } from './dialect/postgres/wal/reader.js'
export {
  type OutboxIndexNames,
  outboxIndexNames,
  qualifiedTable,
  quoteIdent,
} from './dialect/sql-identifiers.js'
export {
  createSqliteBackend,
  isSqliteBusy,
  type SqliteExecutor,
} from './dialect/sqlite/backend.js'
export {
  createSqlitePublisher,
  readSqlitePublishResult,
  type SqlitePublisherSpec,
  type SqliteRows,
  type SqliteStatement,
  sqliteDedupStatement,
  sqlitePublishStatement,
} from './dialect/sqlite/publisher.js'
export { type SqliteInboxStatements, sqliteInboxStatements } from './dialect/sqlite/statements/inbox.js'
export {
  bindSqlite,
  SQLITE_NOW_MS,
  type SqliteSql,
  type SqliteStatements,
  sqliteOutboxDdl,
  sqliteStatements,
} from './dialect/sqlite/statements.js'
export {
  hasSqliteWakeListeners,
  listenSqliteWake,
  wakeSqliteAfterTransaction,
} from './dialect/sqlite/wake.js'
export { assertInbox, INBOX_MAX_ID_LENGTH, inboxMessageId } from './outbox/define-inbox.js'
export {
  assertOutbox,
  parseTableName,
} from './outbox/define-outbox.js'
export { toOutboxError } from './outbox/errors.js'
export { formatValue } from './outbox/format-value.js'
export { encodeJson } from './outbox/json.js'
export {
  assertMessageArray,
  type PreparedMessage,
  prepareMessages,
  prepareMessagesSync,
} from './outbox/message.js'
export {
  assertKnownOptions,
  closestName,
  didYouMean,
  type KnownOptionsContext,
  positiveInt,
  positiveMs,
} from './outbox/options.js'
export { formatIssues } from './outbox/standard-schema.js'
export type {
  BlockedKeyRow,
  BlockedKeysRequest,
  ClaimedRow,
  ClaimRequest,
  CountDeadRequest,
  DeadRow,
  DiscardRequest,
  ExtendLeaseRequest,
  ListDeadRequest,
  PurgeRequest,
  RedriveRequest,
  Settlement,
  SettleRequest,
  StatsRequest,
  StatsRow,
  WakeHandlers,
  WakeSubscription,
} from './protocol/backend.js'
export {
  BROKER_CONTENT_TYPE,
  BROKER_KEY_HEADER,
  BROKER_TOPIC_HEADER,
  type BrokerEnvelope,
  brokerConfirmWithin,
  brokerEnvelope,
  type ForwardableMessage,
} from './protocol/broker-envelope.js'
export type {
  InboxBackend,
  InboxPurgeRequest,
  InboxStatsRequest,
  InboxStatsRow,
} from './protocol/inbox-backend.js'
export { createInboxHandler, type OpenTransaction } from './protocol/inbox-handler.js'
export { createProcessOnce, type InboxClaimWriter } from './protocol/inbox-pipeline.js'
export {
  createPublishPipeline,
  type PublishWriter,
  type SyncPublishWriter,
} from './protocol/publish-pipeline.js'
export { type Publisher, routePublisher } from './protocol/publisher.js'
export type { WalMove, WalReader, WalReadHandlers, WalTransaction } from './protocol/wal.js'
export { backoffDelay } from './relay/backoff.js'
export { type ResolvedRetryPolicy, resolveRetryPolicy } from './relay/retry.js'
