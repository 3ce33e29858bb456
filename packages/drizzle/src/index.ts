export { OUTBOX_STATES, type OutboxTable, outboxSequence, outboxTable } from './outbox-table.js'
export { publish, publishMany } from './publish.js'
export type { DrizzleTransaction } from './transaction.js'
