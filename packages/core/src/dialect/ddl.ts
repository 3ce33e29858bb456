import { assertInbox, type Inbox } from '../outbox/define-inbox.js'
import type { Outbox } from '../outbox/define-outbox.js'
import type { OutboxDialect } from '../outbox/dialect.js'
import { OutboxError } from '../outbox/errors.js'
import { mysqlInboxStatements } from './mysql/statements/inbox.js'
import { mysqlOutboxDdl } from './mysql/statements.js'
import { postgresInboxStatements } from './postgres/statements/inbox.js'
import { postgresStatements } from './postgres/statements.js'
import { sqliteInboxStatements } from './sqlite/statements/inbox.js'
import { sqliteOutboxDdl } from './sqlite/statements.js'

/**
 * The DDL that creates an outbox table and its indexes, for your own migration tool (Prisma
 * Migrate, drizzle-kit custom migrations, TypeORM migrations, Flyway, ...). Idempotent; the same
 * as what `migrate` runs. PostgreSQL by default; `'mysql'` (MySQL 8+, MariaDB 10.6+; with ordered
 * topics it also creates the `<table>_keys` companion table) and `'sqlite'` for the other backends.
 * The column names are the same on every dialect.
 *
 * @example
 * ```ts
 * import { outboxDdl } from '@outboxkit/core'
 * fs.writeFileSync('migrations/001_outbox.sql', outboxDdl(outbox))            // PostgreSQL
 * fs.writeFileSync('migrations/001_outbox.mysql.sql', outboxDdl(outbox, 'mysql'))
 * ```
 */
export function outboxDdl(
  outbox: Pick<Outbox, 'table'> & { readonly orderedTopics?: ReadonlySet<string> },
  dialect: OutboxDialect = 'postgres',
): string {
  switch (dialect) {
    case 'postgres':
      return `${postgresStatements(outbox.table).ddl};\n`
    case 'mysql':
      return mysqlOutboxDdl({ table: outbox.table, orderedTopics: outbox.orderedTopics ?? new Set() })
    case 'sqlite':
      return sqliteOutboxDdl(outbox)
    default:
      throw new OutboxError(
        'INVALID_CONFIG',
        `outboxDdl got the dialect ${JSON.stringify(dialect)}: use 'postgres', 'mysql' or 'sqlite'.`,
        { source: 'core' },
      )
  }
}

/**
 * The DDL that creates an inbox table (`defineInbox`) and its `(consumer, processed_at)` index,
 * for your own migration tool. Idempotent; the same as what `migrate(inbox, backend)` runs.
 * PostgreSQL by default, `'mysql'` or `'sqlite'`. Columns: `consumer`, `message_id` (the primary
 * key together), `processed_at`.
 *
 * @example
 * ```ts
 * fs.writeFileSync('migrations/002_inbox.sql', inboxDdl(inbox))
 * ```
 */
export function inboxDdl(inbox: Inbox, dialect: OutboxDialect = 'postgres'): string {
  assertInbox(inbox, 'inboxDdl')
  switch (dialect) {
    case 'postgres':
      return `${postgresInboxStatements(inbox.table).ddl};\n`
    case 'mysql':
      return `${mysqlInboxStatements(inbox.table).ddl};\n`
    case 'sqlite':
      return `${sqliteInboxStatements(inbox.table).ddl};\n`
    default:
      throw new OutboxError(
        'INVALID_CONFIG',
        `inboxDdl got the dialect ${JSON.stringify(dialect)}: use 'postgres', 'mysql' or 'sqlite'.`,
        { source: 'core' },
      )
  }
}
