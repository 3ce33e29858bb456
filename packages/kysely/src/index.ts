export type { OutboxState, OutboxTable, OutboxTimestamp } from './outbox-table.js'
export { type KyselyTransaction, publish, publishMany } from './publish.js'
