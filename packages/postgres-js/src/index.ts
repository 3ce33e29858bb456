export {
  type PostgresJsBackendConnectionOptions,
  type PostgresJsBackendOptions,
  postgresJsBackend,
} from './backend.js'
export { publish, publishMany } from './publish.js'
export type { PostgresJsTransaction } from './transaction.js'
