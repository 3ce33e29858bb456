import { OutboxError } from '@outboxkit/core'

/** The SQL dialects `@outboxkit/typeorm` can publish on. */
export type TypeormDialect = 'postgres'

/**
 * TypeORM `DataSource` option `type` to outboxkit dialect. Only TypeORM's `postgres` driver (the
 * `pg` module) is supported today; MySQL and SQLite will map here once core has their SQL.
 * CockroachDB and Aurora Data API have their own TypeORM drivers and are not PostgreSQL here.
 */
const DIALECTS: Readonly<Record<string, TypeormDialect>> = { postgres: 'postgres' }

/** The slice of a TypeORM `DataSource` read to choose the dialect. */
export interface TypeormDataSourceLike {
  readonly options: { readonly type: string }
}

/**
 * The outboxkit dialect of a TypeORM `DataSource`, from `dataSource.options.type`.
 *
 * @param doing - what needs the dialect, for the error message (e.g. `'publish'`)
 * @throws OutboxError `INVALID_CONFIG` when the driver is not supported (yet).
 */
export function typeormDialect(dataSource: TypeormDataSourceLike, doing: string): TypeormDialect {
  const type = dataSource?.options?.type
  const dialect = typeof type === 'string' && Object.hasOwn(DIALECTS, type) ? DIALECTS[type] : undefined
  if (!dialect) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${doing} supports TypeORM's 'postgres' driver only for now, got a DataSource of type ${JSON.stringify(type)}. Use a DataSource with type: 'postgres' for the outbox. Nothing was written.`,
      { source: 'typeorm' },
    )
  }
  return dialect
}
