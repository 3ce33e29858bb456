import { type Outbox, OutboxError, outboxDdl, qualifiedTable } from '@outboxkit/core'
import type { MigrationInterface, QueryRunner } from 'typeorm'
import { typeormDialect } from './dialect.js'
import { outboxTableRef } from './outbox-table.js'

/** Options of {@link createOutboxMigration}. */
export interface OutboxMigrationOptions {
  /**
   * The migration's JavaScript timestamp (13 digits), which orders it among your migrations. Use
   * a constant (the time you add it), never `Date.now()` at runtime. Default `1735689600000`
   * (2025-01-01): the outbox table depends on no other table, so running first is fine.
   */
  timestamp?: number
  /**
   * The migration name recorded in TypeORM's migrations table; it must end with the 13-digit
   * timestamp. Default `CreateOutbox<Table><timestamp>`, e.g. `CreateOutbox1735689600000` for
   * the table `outbox` and `CreateOutboxAppEvents1735689600000` for `app.events`.
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
 * A TypeORM migration class for the outbox table: `up()` runs core's idempotent DDL
 * (`outboxDdl(outbox)`: table, `state` check and both partial indexes), `down()` drops the table.
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
 * `down()` throw it for a driver other than `postgres`.
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
  const up = outboxDdl({ table })
  const down = `DROP TABLE IF EXISTS ${qualifiedTable(table)}`
  const dataSourceOf = (runner: QueryRunner) =>
    ((runner as { dataSource?: unknown }).dataSource ?? runner.connection) as { options: { type: string } }

  const migration = class implements MigrationInterface {
    /** The name TypeORM records (it reads the timestamp from its last 13 digits). */
    readonly name = name
    async up(queryRunner: QueryRunner): Promise<void> {
      typeormDialect(dataSourceOf(queryRunner), 'createOutboxMigration')
      await queryRunner.query(up)
    }
    async down(queryRunner: QueryRunner): Promise<void> {
      typeormDialect(dataSourceOf(queryRunner), 'createOutboxMigration')
      await queryRunner.query(down)
    }
  }
  Object.defineProperty(migration, 'name', { value: name })
  return migration
}
