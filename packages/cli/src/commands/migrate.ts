import { migrate, outboxDdl } from '@outboxkit/core'
import type { Command } from '../command.js'

/** `outboxkit migrate`: creates the table and indexes if missing. */
export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'create the outbox table and its indexes if missing (idempotent)',
  usage: 'outboxkit migrate [--table <name>] [--json]',
  details: `Runs CREATE TABLE / CREATE INDEX IF NOT EXISTS behind a transaction-scoped advisory lock,
so it is safe to run again and from several deploy jobs at once. Needs the CREATE privilege on
the schema. To use your own migration tool instead, see \`outboxkit sql\`.`,
  options: {},
  async run(_values, ctx) {
    await migrate(ctx.outbox, ctx.backend())
    ctx.print(
      { table: ctx.outbox.table.display, migrated: true },
      () => `migrated ${ctx.outbox.table.display}: table and indexes are in place`,
    )
  },
}

/** `outboxkit sql`: prints the DDL. */
export const sqlCommand: Command = {
  name: 'sql',
  summary: 'print the DDL of the outbox table, for your own migration tool',
  usage: 'outboxkit sql [--table <name>] [--json]',
  details: `Prints the same idempotent DDL that \`migrate\` runs, for Flyway, Prisma Migrate, drizzle-kit,
TypeORM or plain .sql migrations. Needs no database connection.

  outboxkit sql --table app.outbox > migrations/20250101_outbox.sql`,
  options: {},
  async run(_values, ctx) {
    const sql = outboxDdl(ctx.outbox)
    ctx.print({ table: ctx.outbox.table.display, sql }, () => sql.trimEnd())
  },
}
