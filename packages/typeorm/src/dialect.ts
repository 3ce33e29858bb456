import type { OutboxDialect } from '@outboxkit/core'
import { OutboxError } from '@outboxkit/core'

export type { OutboxDialect }

/**
 * TypeORM `DataSource` option `type` to outboxkit dialect: `postgres` (the `pg` module),
 * `mysql` and `mariadb` (TypeORM's MySQL driver, on `mysql2`), `better-sqlite3`. Other SQLite
 * drivers (`sqlite`, `sqljs`, the mobile ones) have no synchronous transaction state to check
 * and are not supported. CockroachDB and Aurora Data API have their own TypeORM drivers and are
 * not PostgreSQL here.
 */
const DIALECTS: Readonly<Record<string, OutboxDialect>> = {
  postgres: 'postgres',
  mysql: 'mysql',
  mariadb: 'mysql',
  'better-sqlite3': 'sqlite',
}

/** The slice of a TypeORM `DataSource` read to choose the dialect. */
export interface TypeormDataSourceLike {
  readonly options: { readonly type: string }
}

/**
 * The outboxkit dialect of a TypeORM `DataSource`, from `dataSource.options.type` (the same
 * object as `dataSource.driver.options`).
 *
 * @param doing - what needs the dialect, for the error message (e.g. `'publish'`)
 * @throws OutboxError `INVALID_CONFIG` when the driver is not supported.
 */
export function typeormDialect(dataSource: TypeormDataSourceLike, doing: string): OutboxDialect {
  const type = dataSource?.options?.type
  const dialect = typeof type === 'string' && Object.hasOwn(DIALECTS, type) ? DIALECTS[type] : undefined
  if (!dialect) {
    const sqliteHint = /sqlite|sqljs|capacitor|cordova|expo|nativescript|react-native/.test(String(type))
      ? ` For SQLite use type: 'better-sqlite3'.`
      : ''
    throw new OutboxError(
      'INVALID_CONFIG',
      `${doing} supports TypeORM's 'postgres', 'mysql', 'mariadb' and 'better-sqlite3' drivers, got a DataSource of type ${JSON.stringify(type)}.${sqliteHint} Nothing was written.`,
      { source: 'typeorm' },
    )
  }
  return dialect
}
