import { defineOutbox, migrate, type Outbox, outboxDdl } from '@outboxkit/core'
import { mysqlOutboxDdl, sqliteOutboxDdl } from '@outboxkit/core/adapter'
import type { Command } from '../command.js'
import { DIALECTS, dialectOfUrl, type OutboxDialect } from '../database-url.js'
import { UsageError } from '../usage.js'

/** `outboxkit migrate`: creates the table and indexes if missing. */
export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'create the outbox table and its indexes if missing (idempotent)',
  usage: 'outboxkit migrate [--wal] [--table <name>] [--json]',
  details: `Creates the table and its indexes with IF NOT EXISTS, so it is safe to run again and from
several deploy jobs at once: on PostgreSQL behind a transaction-scoped advisory lock, on
MySQL/MariaDB as one CREATE TABLE with its indexes, on SQLite in one BEGIN IMMEDIATE transaction
(the database file is created if missing; every other command refuses a missing file). Needs the
CREATE privilege. To use your own migration tool instead, see \`outboxkit sql\`.

Options:
  --wal            also create the replication slot of a transport 'wal' outbox (PostgreSQL 14+
                   with wal_level = logical, docs/wal.md)`,
  options: { wal: { type: 'boolean', default: false } },
  async run(values, ctx) {
    const wal = values.wal === true
    const outbox = wal ? defineOutbox({ table: ctx.outbox.table.display, transport: 'wal' }) : ctx.outbox
    await migrate(outbox, await ctx.backend())
    ctx.print(
      { table: outbox.table.display, migrated: true, ...(wal ? { slot: true } : {}) },
      () =>
        `migrated ${outbox.table.display}: table and indexes${wal ? ', publication and replication slot' : ''} are in place`,
    )
  },
}

/** The idempotent DDL of `outbox` in `dialect`: what `migrate` runs there. */
function ddlOf(outbox: Outbox, dialect: OutboxDialect): string {
  switch (dialect) {
    case 'postgres':
      return outboxDdl(outbox)
    case 'mysql':
      return mysqlOutboxDdl(outbox)
    case 'sqlite':
      return sqliteOutboxDdl(outbox)
  }
}

/** `--dialect`, else the scheme of `DATABASE_URL` when set, else PostgreSQL. */
function chosenDialect(given: unknown, url: string | undefined): OutboxDialect {
  if (given === undefined) {
    if (!url) return 'postgres'
    try {
      return dialectOfUrl(url, 'sql')
    } catch (error) {
      if (!(error instanceof UsageError)) throw error
      throw new UsageError(`${error.message} Or say which DDL: --dialect postgres|mysql|sqlite.`, 'sql')
    }
  }
  if (!DIALECTS.includes(given as OutboxDialect)) {
    throw new UsageError(
      `--dialect must be postgres, mysql (also for MariaDB) or sqlite, got ${JSON.stringify(given)}.`,
      'sql',
    )
  }
  return given as OutboxDialect
}

/** `outboxkit sql`: prints the DDL. */
export const sqlCommand: Command = {
  name: 'sql',
  summary: 'print the DDL of the outbox table, for your own migration tool',
  usage: 'outboxkit sql [--dialect postgres|mysql|sqlite] [--table <name>] [--json]',
  details: `Prints the same idempotent DDL that \`migrate\` runs, for Flyway, Prisma Migrate, drizzle-kit,
TypeORM, Knex or plain .sql migrations. Needs no database connection.

Options:
  --dialect <d>    postgres, mysql (MySQL 8+ and MariaDB 10.6+) or sqlite
                   (default: the scheme of $DATABASE_URL when set, else postgres)

  outboxkit sql --table app.outbox > migrations/20250101_outbox.sql
  outboxkit sql --dialect mysql > migrations/20250101_outbox.sql`,
  options: { dialect: { type: 'string' } },
  async run(values, ctx) {
    const dialect = chosenDialect(values.dialect, ctx.io.env.DATABASE_URL)
    const sql = ddlOf(ctx.outbox, dialect)
    ctx.print({ table: ctx.outbox.table.display, dialect, sql }, () => sql.trimEnd())
  },
}
