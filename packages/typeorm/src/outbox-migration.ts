import { type Outbox, OutboxError, outboxDdl, type TableRef } from '@outboxkit/core'
import {
  mysqlOutboxNames,
  mysqlQualifiedTable,
  mysqlStatements,
  qualifiedTable,
  sqliteStatements,
} from '@outboxkit/core/adapter'
import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm'
import { type OutboxDialect, typeormDialect } from './dialect.js'
import { outboxTableRef } from './outbox-table.js'

/** Options of {@link createOutboxMigration}. */
export interface OutboxMigrationOptions {
  /**
   * The migration's JavaScript timestamp (13 digits), which orders it among your migrations. Use
   * a constant (the time you add it), never `Date.now()` at runtime. Default `1735689600000`
   * (2025-01-01): the outbox table depends on no other table, so running first is fine.
   *
   * @defaultValue `1735689600000` (2025-01-01)
   */
  timestamp?: number
  /**
   * The migration name recorded in TypeORM's migrations table; it must end with the 13-digit
   * timestamp. Default `CreateOutbox<Table><timestamp>`, e.g. `CreateOutbox1735689600000` for
   * the table `outbox` and `CreateOutboxAppEvents1735689600000` for `app.events`.
   *
   * @defaultValue `CreateOutbox<Table><timestamp>`
   */
  name?: string
}

/** The class {@link createOutboxMigration} returns: a TypeORM migration with a no-argument constructor. */
export type OutboxMigrationClass = new () => MigrationInterface

const DEFAULT_TIMESTAMP = 1_735_689_600_000

function pascal(display: string): string {
  return display
    .split(/[._]/)
    .filter(Boolean)
    .map((p) => p[0]!.toUpperCase() + p.slice(1))
    .join('')
}

function invalid(message: string): OutboxError {
  return new OutboxError('INVALID_CONFIG', message, { source: 'typeorm' })
}

/**
 * Runs one statement, or on SQLite one script: TypeORM's better-sqlite3 runner prepares a single
 * statement per query, so a script goes to the connection's own `exec()` (the DataSource's one
 * connection, inside the migration's transaction), logged through TypeORM's logger.
 */
async function runScript(queryRunner: QueryRunner, dialect: OutboxDialect, sql: string): Promise<void> {
  if (dialect !== 'sqlite') {
    await queryRunner.query(sql)
    return
  }
  const db = (await queryRunner.connect()) as { exec(script: string): unknown }
  const dataSource = ((queryRunner as { dataSource?: DataSource }).dataSource ??
    queryRunner.connection) as DataSource
  dataSource.logger.logQuery(sql, [], queryRunner)
  db.exec(sql)
}

/** The statements of the migration's `up()` and `down()` on one dialect. */
function migrationSql(dialect: OutboxDialect, table: TableRef, ordered: boolean) {
  if (dialect === 'mysql') {
    const keys = mysqlQualifiedTable({ ...table, name: mysqlOutboxNames(table).keysTable })
    return {
      up: [...mysqlStatements(table).migrate(ordered)],
      down: [`DROP TABLE IF EXISTS ${keys}`, `DROP TABLE IF EXISTS ${mysqlQualifiedTable(table)}`],
    }
  }
  if (dialect === 'sqlite') {
    // A script (several statements): run with better-sqlite3's exec(), see runScript.
    return { up: [sqliteStatements(table).ddl], down: [`DROP TABLE IF EXISTS ${qualifiedTable(table)}`] }
  }
  // PostgreSQL takes the whole idempotent DDL as one simple-protocol query.
  return { up: [outboxDdl({ table })], down: [`DROP TABLE IF EXISTS ${qualifiedTable(table)}`] }
}

/**
 * A TypeORM migration class for the outbox table, for the DataSource it runs on: `up()` runs
 * core's idempotent DDL for that database, `down()` drops the table.
 * - `postgres`: `outboxDdl(outbox)`: the table, the `state` check and its partial indexes.
 * - `mysql` / `mariadb`: `mysqlOutboxDdl(outbox)` (and, for an outbox with `orderedTopics`, the
 *   companion table of ordered keys, which `down()` drops too).
 * - `better-sqlite3`: `sqliteOutboxDdl(outbox)`, one statement at a time.
 *
 * Add it to your DataSource's `migrations` and run `typeorm migration:run` (or
 * `dataSource.runMigrations()`). The DDL is the same that `migrate(outbox, backend)` runs, so
 * either may come first.
 *
 * @example
 * ```ts
 * // src/migrations/outbox.ts
 * export const CreateOutbox = createOutboxMigration(outbox, { timestamp: 1767225600000 })
 * // data-source.ts
 * new DataSource({ type: 'postgres', url, entities: [...], migrations: [CreateOutbox, ...] })
 * ```
 * @throws OutboxError `INVALID_CONFIG` for an invalid outbox, timestamp or name; `up()` and
 * `down()` throw it for a driver other than `postgres`, `mysql`, `mariadb` and `better-sqlite3`.
 */
export function createOutboxMigration(
  outbox: string | Outbox<any>,
  options: OutboxMigrationOptions = {},
): OutboxMigrationClass {
  const table = outboxTableRef(outbox)
  const timestamp = options.timestamp ?? DEFAULT_TIMESTAMP
  if (!Number.isSafeInteger(timestamp) || String(timestamp).length !== 13) {
    throw invalid(
      `createOutboxMigration timestamp must be a 13-digit JavaScript timestamp such as 1767225600000, got ${String(timestamp)}.`,
    )
  }
  const name =
    options.name ?? `CreateOutbox${table.display === 'outbox' ? '' : pascal(table.display)}${timestamp}`
  if (typeof name !== 'string' || !/^[A-Za-z_$][\w$]*\d{13}$/.test(name)) {
    throw invalid(
      `createOutboxMigration name must be an identifier ending with a 13-digit timestamp (TypeORM orders migrations by it), e.g. 'CreateOutbox1767225600000', got ${JSON.stringify(name)}.`,
    )
  }
  const ordered = typeof outbox !== 'string' && outbox.orderedTopics.size > 0
  const dataSourceOf = (runner: QueryRunner) =>
    ((runner as { dataSource?: unknown }).dataSource ?? runner.connection) as { options: { type: string } }

  const migration = class implements MigrationInterface {
    /** The name TypeORM records (it reads the timestamp from its last 13 digits). */
    readonly name = name
    async up(queryRunner: QueryRunner): Promise<void> {
      const dialect = typeormDialect(dataSourceOf(queryRunner), 'createOutboxMigration')
      for (const statement of migrationSql(dialect, table, ordered).up) {
        await runScript(queryRunner, dialect, statement)
      }
    }
    async down(queryRunner: QueryRunner): Promise<void> {
      const dialect = typeormDialect(dataSourceOf(queryRunner), 'createOutboxMigration')
      for (const statement of migrationSql(dialect, table, ordered).down) await queryRunner.query(statement)
    }
  }
  Object.defineProperty(migration, 'name', { value: name })
  return migration
}
