export { OUTBOX_STATES, type OutboxTable, outboxTable } from './outbox-table.js'
export { publish, publishMany } from './publish.js'
export type { DrizzleTransaction } from './transaction.js'
