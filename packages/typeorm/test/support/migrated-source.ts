import { uniqueTableName } from '@outboxkit/conformance'
import { DataSource, type DataSourceOptions, type EntitySchema, type MigrationInterface } from 'typeorm'
import { expect } from 'vitest'

/** A migration class, as `createOutboxMigration` returns it. */
type MigrationClass = new () => MigrationInterface

/**
 * A data source on `options` with the outbox entity and migration, its migrations recorded in a
 * table of their own (`migrationsTableName`, for the test to drop); not yet initialized.
 */
export function outboxDataSource(
  options: DataSourceOptions,
  entity: EntitySchema<any>,
  migration: MigrationClass,
): { dataSource: DataSource; migrationsTableName: string } {
  const migrationsTableName = uniqueTableName('typeorm_migrations')
  const dataSource = new DataSource({
    ...options,
    entities: [entity],
    migrations: [migration],
    migrationsTableName,
  } as DataSourceOptions)
  return { dataSource, migrationsTableName }
}

/** Runs the pending migrations of `dataSource`: exactly `migration` must run. */
export async function expectOnlyMigrationRan(
  dataSource: DataSource,
  migration: MigrationClass,
): Promise<void> {
  const ran = await dataSource.runMigrations()
  expect(ran.map((m) => m.name)).toEqual([new migration().name])
}
