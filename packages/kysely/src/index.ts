export type { OutboxDialect } from './dialect.js'
export { inboxHandler } from './inbox-handler.js'
export type {
  MysqlOutboxTable,
  OutboxState,
  OutboxTable,
  OutboxTimestamp,
  SqliteOutboxTable,
} from './outbox-table.js'
export { processOnce, publish, publishMany } from './publish.js'
export type { KyselyTransaction } from './transaction.js'
