export {
  type MysqlBackendCommonOptions,
  type MysqlBackendOptions,
  type MysqlBackendPoolOptions,
  type MysqlBackendUriOptions,
  mysqlBackend,
} from './backend.js'
export { inboxHandler } from './inbox-handler.js'
export { type MysqlTransactionConnection, processOnce, publish, publishMany } from './publish.js'
