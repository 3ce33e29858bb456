export { type BackendContext, type BackendHarness, runBackendConformance } from './backend-suite.js'
export {
  type Inspector,
  mysqlInspector,
  serverInspector,
  sqliteInspector,
  testDatabaseUrl,
  testMysqlUri,
  uniqueTableName,
  waitFor,
} from './database.js'
export {
  ALL_DIALECTS,
  assertDialect,
  type IndexInfo,
  type InspectFn,
  type OutboxDialect,
  type OutboxRowRead,
  type OutboxSql,
  outboxSql,
  type RowChanges,
  type RowFilter,
  type SeedRow,
  type SeedState,
} from './dialect-sql.js'
export {
  deliveredMessage,
  type ForwarderConformance,
  type ForwarderHarness,
  type ReceivedRecord,
  runForwarderConformance,
} from './forwarder-suite.js'
export { registerInboxTests, runInboxConformance } from './inbox-suite.js'
export {
  type BrokerCrashOptions,
  type BrokerCrashReport,
  expectCrashSurvived,
  runBrokerCrash,
} from './kit/broker-crash.js'
export {
  type BrokerLedgerVerdict,
  type BrokerRecord,
  brokerLedgerVerdict,
  type LedgerMessage,
  type ProducedLedger,
  type ProduceKeyedOptions,
  produceKeyed,
} from './kit/broker-ledger.js'
// The test kit: helpers every package's tests share.
export { countedHandler, type HandlerCounts } from './kit/counted-handler.js'
export { collect, type NextEventOptions, nextEvent } from './kit/events.js'
export { inspectedBy, type RowsQueryable, rowsInspector } from './kit/inspectors.js'
export { expectProbeHeardOnlyDirectly, type ProbeCheck, type ProbedSubscription } from './kit/listen-probe.js'
export { expectTimeoutBehindLock, type TimeoutBehindLock } from './kit/lock-timeout.js'
export { OUTBOX_COLUMNS, type OutboxTableOptions, useOutboxTable } from './kit/outbox-table.js'
export {
  expectOutboxError,
  failure,
  invalidConfigMessage,
  type OutboxErrorExpectation,
  rejection,
  settle,
  thrown,
} from './kit/outcomes.js'
export { type Committed, createPgOutbox, type PgOutbox } from './kit/pg-outbox.js'
export {
  type DirectListenCheck,
  expectPollingWhenUnheard,
  expectWokenByDirectListen,
  type PollingCheck,
  type PooledRelayCheck,
} from './kit/pooled-listen.js'
export {
  describeThroughPgBouncer,
  POSTGRES_JS_ESCAPES_THROUGH_PGBOUNCER,
  pgBouncerSkipReason,
  pgBouncerUrl,
} from './kit/pooler.js'
export { recordingPgClient } from './kit/recording.js'
export {
  expectPublishRefused,
  expectUnawaitedPublishContained,
  type Publisher,
  type RefusalExpectation,
  type UnawaitedPublish,
} from './kit/refusals.js'
export type { ForwarderModule, RelayChildConfig } from './kit/relay-child.js'
export { type FixtureOutboxOptions, messages, RelayFixture, tableSql } from './kit/relay-fixture.js'
export {
  freePort,
  portAccepts,
  type ServerProcess,
  startServerProcess,
} from './kit/server-process.js'
export { killServerMidDrain, type MidDrainKill, RESTART_RELAY_OPTIONS } from './kit/server-restart.js'
export { type ClaimedAttempt, settleDelivered } from './kit/settlements.js'
export { removeSqliteFile, tempSqliteFile } from './kit/sqlite-files.js'
export {
  type PausableProxy,
  type ProxyInFile,
  startPausableProxy,
  usePausableProxy,
} from './kit/tcp-proxy.js'
export { type TestResources, useTestResources } from './kit/test-resources.js'
export {
  commitOrRollback,
  inMysqlTransaction,
  inPgTransaction,
  runTransaction,
  serialQueue,
  sqlSavepoint,
  type TransactionEnd,
  type TransactionSteps,
} from './kit/transactions.js'
export { type Deferred, deferred, observeFor } from './kit/waits.js'
export { dropWalOutbox, type WalCleanupQueryable } from './kit/wal-cleanup.js'
export { DIALECTS, parseDialects, parseTransport, TRANSPORT } from './matrix.js'
export {
  MemoryBackend,
  type MemoryMessage,
  type MemoryOperation,
  type MemoryRow,
  memoryBackend,
} from './memory-backend.js'
export {
  type PublishContext,
  type PublishHarness,
  type RefusedHandle,
  runPublishConformance,
} from './publish-suite.js'
