export { publish, publishMany } from './publish.js'
export { type OutboxPrismaModelOptions, outboxMigrationSql, outboxPrismaModel } from './schema.js'
export type { PrismaTransactionClient } from './transaction-client.js'
