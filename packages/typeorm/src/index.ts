export type { OutboxDialect } from './dialect.js'
export { createInboxEntity, createInboxMigration, type InboxRow } from './inbox-entity.js'
export { inboxHandler } from './inbox-handler.js'
export {
  createOutboxEntity,
  type OutboxEntityOptions,
  type OutboxMessageRow,
  type OutboxState,
} from './outbox-entity.js'
export {
  createOutboxMigration,
  type OutboxMigrationClass,
  type OutboxMigrationOptions,
} from './outbox-migration.js'
export { processOnce, publish, publishMany } from './publish.js'
export type { TypeormTransaction } from './transaction-handle.js'
