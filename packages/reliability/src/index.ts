export { type ChaosOptions, type ChaosReport, runChaos } from './chaos.js'
export { pollUntil, quietPool, randomInt, reliabilityDatabaseUrl, sql } from './database.js'
export { computeKeyOrder, type KeyOrderVerdict } from './key-order.js'
export {
  captureInFlight,
  createLedger,
  dropLedger,
  type LedgerTables,
  ledgerTables,
  liveRows,
  openConnections,
  type RunOutboxOptions,
  runOutbox,
} from './ledger.js'
export {
  type DatabaseTarget,
  type LedgerDb,
  type LedgerDriver,
  type OpenLedgerDbOptions,
  openLedgerDb,
  openSqliteFile,
  pgLedgerDb,
  quietMysqlPool,
} from './ledger-db.js'
export { type LedgerSql, ledgerSql, positional } from './ledger-sql.js'
export {
  type OrderedProduction,
  type ProduceOptions,
  type ProducerStats,
  produce,
  publishCommitted,
} from './producer.js'
export { type DeathRecord, RelayFleet, type RelayFleetOptions } from './relay-fleet.js'
export { type RelayExit, type RelayProcess, spawnRelayProcess } from './relay-process.js'
export {
  RELAY_CONFIG_ENV,
  type RelayWorkerConfig,
  type WorkerHandlerConfig,
  type WorkerLine,
} from './relay-worker-config.js'
export { figuresLine, formatChaosReport, verdictFigures } from './report.js'
export { computeVerdict, explainedTotal, type Verdict, violations } from './verdict.js'
