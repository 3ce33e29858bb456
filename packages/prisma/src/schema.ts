import { type Outbox, OutboxError } from '@outboxkit/core'
import { dialectOfProvider, type PrismaOutboxProvider } from './prisma-dialect.js'
import { mysqlMigrationSql, mysqlPrismaModel } from './schema-mysql.js'
import { postgresMigrationSql, postgresPrismaModel } from './schema-postgres.js'
import { sqliteMigrationSql, sqlitePrismaModel } from './schema-sqlite.js'
import { ADAPTER } from './transaction-client.js'

/** Options of {@link outboxPrismaModel}. */
export interface OutboxPrismaModelOptions {
  /**
   * The Prisma model name.
   *
   * @defaultValue `'OutboxMessage'`
   */
  model?: string
  /**
   * The `provider` of your schema's `datasource` block: `'postgresql'` (default), `'mysql'`
   * (MySQL 8+ and MariaDB 10.6+) or `'sqlite'`.
   *
   * @defaultValue `'postgresql'`
   */
  provider?: PrismaOutboxProvider
}

/** Options of {@link outboxMigrationSql}. */
export interface OutboxMigrationSqlOptions {
  /**
   * The `provider` of your schema's `datasource` block.
   *
   * @defaultValue `'postgresql'`
   */
  provider?: PrismaOutboxProvider
}

/** What the schema helpers read from an outbox definition: its table, and its ordered topics (MySQL). */
export type OutboxSchemaSource = Pick<Outbox, 'table'> & Partial<Pick<Outbox, 'orderedTopics'>>

const MODEL_NAME = /^[A-Za-z][A-Za-z0-9_]*$/

/**
 * The Prisma schema model of an outbox table, for Prisma Migrate and for reading the outbox with
 * Prisma Client. Columns, types, defaults and index names match the DDL of `@outboxkit/core` for
 * the provider (`outboxDdl`, `mysqlOutboxDdl`, `sqliteOutboxDdl`); the package ships the default
 * ones as `schema/outbox.prisma`, `schema/outbox.mysql.prisma` and `schema/outbox.sqlite.prisma`.
 *
 * Prisma's schema cannot express everything the table has (the `CHECK` on `state`; on PostgreSQL
 * and SQLite the `WHERE` of the partial indexes; on PostgreSQL the sequence of ordered topics; on
 * MySQL the character sets and the generated columns), so create the table with
 * {@link outboxMigrationSql} inside the migration Prisma creates for this model
 * (`prisma migrate dev --create-only`). On PostgreSQL a schema-qualified table (`'app.outbox'`)
 * gets `@@schema("app")`: list that schema in the datasource's `schemas`. On MySQL an outbox with
 * `orderedTopics` gets a second model, `<model>Key`, for the companion table of ordered keys.
 *
 * @example
 * ```ts
 * fs.writeFileSync('prisma/outbox.prisma', outboxPrismaModel(outbox, { provider: 'mysql' }))
 * ```
 * @throws OutboxError `INVALID_CONFIG` for an invalid model name or provider, or a
 * schema-qualified table on MySQL or SQLite (Prisma cannot place a model in another database).
 */
export function outboxPrismaModel(
  outbox: OutboxSchemaSource,
  options: OutboxPrismaModelOptions = {},
): string {
  const model = options.model ?? 'OutboxMessage'
  if (typeof model !== 'string' || !MODEL_NAME.test(model)) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `model must be a Prisma model name (a letter, then letters, digits or '_'), got ${JSON.stringify(model)}.`,
      { source: ADAPTER },
    )
  }
  const dialect = dialectOfProvider(options.provider ?? 'postgresql')
  if (dialect === 'postgres') return postgresPrismaModel(outbox, model)
  if (outbox.table.schema) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `outboxPrismaModel cannot model the table ${JSON.stringify(outbox.table.display)} for the "${options.provider}" provider: Prisma has no @@schema there, so a model cannot live in another ${dialect === 'mysql' ? 'database' : 'attached database'}. Define the outbox with an unqualified table name.`,
      { source: ADAPTER },
    )
  }
  return dialect === 'mysql' ? mysqlPrismaModel(outbox, model) : sqlitePrismaModel(outbox, model)
}

/**
 * The SQL that creates an outbox table exactly as `@outboxkit/core` expects it on the provider's
 * database, for a Prisma Migrate migration file. Idempotent (`IF NOT EXISTS`), so it is safe where
 * `migrate()` of `@outboxkit/core` already created the table. The package ships the default ones
 * as `schema/outbox.sql`, `schema/outbox.mysql.sql` and `schema/outbox.sqlite.sql`.
 *
 * - `postgresql`: the columns, the `state` check, the partial claim index, the partial unique
 *   index on `dedup_key`, and the sequence and index of ordered topics (it also upgrades a table
 *   created by an earlier version).
 * - `mysql`: one `CREATE TABLE` with its generated columns, indexes and check; with
 *   `orderedTopics`, the companion table of ordered keys too.
 * - `sqlite`: the table and its four partial indexes.
 *
 * @example
 * ```ts
 * // after `npx prisma migrate dev --create-only --name outbox`:
 * fs.writeFileSync('prisma/migrations/20250101000000_outbox/migration.sql', outboxMigrationSql(outbox))
 * ```
 * @throws OutboxError `INVALID_CONFIG` for an invalid provider.
 */
export function outboxMigrationSql(
  outbox: OutboxSchemaSource,
  options: OutboxMigrationSqlOptions = {},
): string {
  const dialect = dialectOfProvider(options.provider ?? 'postgresql')
  if (dialect === 'postgres') return postgresMigrationSql(outbox)
  if (dialect === 'mysql')
    return mysqlMigrationSql({ table: outbox.table, orderedTopics: outbox.orderedTopics ?? new Set() })
  return sqliteMigrationSql(outbox)
}
