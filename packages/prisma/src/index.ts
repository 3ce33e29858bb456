export { inboxHandler } from './inbox-handler.js'
export { inboxMigrationSql, inboxPrismaModel } from './inbox-schema.js'
export { type OutboxDialect, type PrismaOutboxProvider, prismaDialect } from './prisma-dialect.js'
export { processOnce, publish, publishMany } from './publish.js'
export {
  type OutboxMigrationSqlOptions,
  type OutboxPrismaModelOptions,
  type OutboxSchemaSource,
  outboxMigrationSql,
  outboxPrismaModel,
} from './schema.js'
export type { PrismaTransactionClient } from './transaction-client.js'
