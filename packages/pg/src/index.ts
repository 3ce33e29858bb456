export {
  type PgBackendCommonOptions,
  type PgBackendConnectionOptions,
  type PgBackendOptions,
  type PgBackendPoolOptions,
  pgBackend,
} from './backend.js'
export { inboxHandler } from './inbox-handler.js'
export {
  type PgPublisher,
  type PgPublisherOptions,
  type PgTransactionClient,
  pgPublisher,
  processOnce,
  publish,
  publishMany,
} from './publish.js'
