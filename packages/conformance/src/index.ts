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
export { DIALECTS, parseDialects } from './matrix.js'
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
