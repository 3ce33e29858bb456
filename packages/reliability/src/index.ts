export { type ChaosOptions, type ChaosReport, runChaos } from './chaos.js'
export { pollUntil, quietPool, randomInt, reliabilityDatabaseUrl, sql } from './database.js'
export {
  captureInFlight,
  createLedger,
  dropLedger,
  explainSql,
  type LedgerTables,
  ledgerInsertSql,
  ledgerTables,
  runOutbox,
} from './ledger.js'
export { type ProduceOptions, type ProducerStats, produce } from './producer.js'
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
