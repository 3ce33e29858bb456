export {
  type PgBackendCommonOptions,
  type PgBackendConnectionOptions,
  type PgBackendOptions,
  type PgBackendPoolOptions,
  pgBackend,
} from './backend.js'
export { type PgTransactionClient, publish, publishMany } from './publish.js'
