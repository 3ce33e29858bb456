export {
  type PostgresJsBackendConnectionOptions,
  type PostgresJsBackendOptions,
  postgresJsBackend,
} from './backend.js'
export { inboxHandler } from './inbox-handler.js'
export { processOnce, publish, publishMany } from './publish.js'
export type { PostgresJsTransaction } from './transaction.js'
