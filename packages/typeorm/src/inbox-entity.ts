import { type Inbox, inboxDdl, isInbox, OutboxError } from '@outboxkit/core'
import { mysqlQualifiedTable, qualifiedTable } from '@outboxkit/core/adapter'
import { EntitySchema, type MigrationInterface, type QueryRunner } from 'typeorm'
import { type OutboxDialect, typeormDialect } from './dialect.js'

/** A row of the inbox table, as {@link createInboxEntity} maps it. */
export interface InboxRow {
  consumer: string
  messageId: string
  /** PostgreSQL and MySQL: a Date; SQLite: epoch milliseconds. */
  processedAt: Date | number
}

function inboxOf(inbox: Inbox, what: string): Inbox {
  if (!isInbox(inbox)) {
    throw new OutboxError('INVALID_CONFIG', `${what} needs an inbox made by defineInbox().`, {
      source: 'typeorm',
    })
  }
  return inbox
}

/**
 * A TypeORM `EntitySchema` of the inbox table (`defineInbox`), to read or count processed ids
 * with a repository. `synchronize: false`: the table comes from `migrate(inbox, backend)` or
 * {@link createInboxMigration}; write it only through `processOnce`.
 *
 * @example
 * ```ts
 * export const InboxEntry = createInboxEntity(inbox)
 * const n = await dataSource.getRepository(InboxEntry).countBy({ consumer: 'billing' })
 * ```
 */
export function createInboxEntity(inbox: Inbox, options: { dialect?: OutboxDialect; name?: string } = {}) {
  const { table } = inboxOf(inbox, 'createInboxEntity')
  const dialect = options.dialect ?? 'postgres'
  const time = dialect === 'sqlite' ? 'integer' : dialect === 'mysql' ? 'datetime' : 'timestamptz'
  return new EntitySchema<InboxRow>({
    name:
      options.name ??
      (table.display === 'inbox' ? 'InboxEntry' : `InboxEntry_${table.display.replace('.', '_')}`),
    tableName: table.name,
    ...(table.schema && dialect === 'postgres' ? { schema: table.schema } : {}),
    ...(table.schema && dialect === 'mysql' ? { database: table.schema } : {}),
    synchronize: false,
    columns: {
      consumer: {
        type: dialect === 'mysql' ? 'varchar' : 'text',
        length: dialect === 'mysql' ? 255 : undefined,
        primary: true,
      },
      messageId: {
        name: 'message_id',
        type: dialect === 'mysql' ? 'varchar' : 'text',
        length: dialect === 'mysql' ? 255 : undefined,
        primary: true,
      },
      processedAt: { name: 'processed_at', type: time, ...(dialect === 'mysql' ? { precision: 6 } : {}) },
    },
  })
}

/**
 * A TypeORM migration class that creates the inbox table and its index (the DDL of `inboxDdl` for
 * the DataSource's dialect; idempotent), and drops the table in `down()`. Add it to your
 * DataSource's `migrations`.
 *
 * @example
 * ```ts
 * new DataSource({ ..., migrations: [createOutboxMigration(outbox), createInboxMigration(inbox)] })
 * ```
 */
export function createInboxMigration(
  inbox: Inbox,
  options: { timestamp?: number; name?: string } = {},
): new () => MigrationInterface {
  const { table } = inboxOf(inbox, 'createInboxMigration')
  const timestamp = options.timestamp ?? 1_735_689_600_001
  const name = options.name ?? `CreateInbox${timestamp}`
  if (!Number.isSafeInteger(timestamp) || !/^[A-Za-z_$][\w$]*\d{13}$/.test(name)) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `createInboxMigration needs a 13-digit timestamp and a name ending with it, got ${String(timestamp)} and ${JSON.stringify(name)}.`,
      { source: 'typeorm' },
    )
  }
  const dialectOf = (runner: QueryRunner) =>
    typeormDialect(
      ((runner as { dataSource?: unknown }).dataSource ?? runner.connection) as { options: { type: string } },
      'createInboxMigration',
    )
  const migration = class implements MigrationInterface {
    readonly name = name
    async up(queryRunner: QueryRunner): Promise<void> {
      for (const statement of inboxDdl(inbox, dialectOf(queryRunner)).split(';\n')) {
        if (statement.trim()) await queryRunner.query(statement)
      }
    }
    async down(queryRunner: QueryRunner): Promise<void> {
      const t = dialectOf(queryRunner) === 'mysql' ? mysqlQualifiedTable(table) : qualifiedTable(table)
      await queryRunner.query(`DROP TABLE IF EXISTS ${t}`)
    }
  }
  Object.defineProperty(migration, 'name', { value: name })
  return migration
}
