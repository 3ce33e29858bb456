import type { OutboxDialect } from '@outboxkit/core'
import { OutboxError } from '@outboxkit/core'
import { ADAPTER } from './transaction-client.js'

export type { OutboxDialect }

/** The datasource providers of a Prisma schema that outboxkit supports. */
export type PrismaOutboxProvider = 'postgresql' | 'mysql' | 'sqlite'

const DIALECT_OF_PROVIDER: Readonly<Record<PrismaOutboxProvider, OutboxDialect>> = {
  postgresql: 'postgres',
  mysql: 'mysql',
  sqlite: 'sqlite',
}

/**
 * What a driver adapter calls its database (`SqlDriverAdapterFactory.provider` of
 * `@prisma/driver-adapter-utils`): `'postgres'` where the schema says `'postgresql'`.
 */
const DIALECT_OF_ADAPTER: Readonly<Record<string, OutboxDialect>> = {
  postgres: 'postgres',
  mysql: 'mysql',
  sqlite: 'sqlite',
}

function read(handle: object, key: PropertyKey): unknown {
  // Direct reads only: Prisma's client proxies throw on ownKeys.
  return (handle as Record<PropertyKey, unknown>)[key]
}

/**
 * The datasource provider of a Prisma client (root, `$extends()`, transaction or nested
 * transaction client), or `undefined` when `handle` does not look like a Prisma client.
 *
 * Reads `_activeProvider`: the `provider` of the schema's `datasource` block, which the generated
 * client passes to the runtime (`config.activeProvider`) and the runtime stores on every client it
 * builds. Prisma itself reads it to pick the query compiler and to serialise raw-query values, and
 * it checks at construction that the driver adapter is for that provider (`The Driver Adapter ...
 * is not compatible with the provider ...`), so it is the dialect the transaction's connection
 * speaks. A transaction client reaches it through its proxy onto the root client. When it is
 * absent (a future Prisma), the driver adapter's own public `provider` field is the fallback.
 */
export function prismaProvider(handle: unknown): string | undefined {
  if (!handle || (typeof handle !== 'object' && typeof handle !== 'function')) return undefined
  const active = read(handle, '_activeProvider')
  if (typeof active === 'string') return active
  const engineConfig = read(handle, '_engineConfig') as { adapter?: { provider?: unknown } } | undefined
  const adapterProvider = engineConfig?.adapter?.provider
  if (typeof adapterProvider === 'string') {
    return adapterProvider === 'postgres' ? 'postgresql' : adapterProvider
  }
  return undefined
}

/**
 * The SQL dialect of a Prisma client: `'postgres'` for the `postgresql` provider, `'mysql'` for
 * `mysql` (MySQL 8 and MariaDB, through `@prisma/adapter-mariadb`), `'sqlite'` for `sqlite`
 * (through `@prisma/adapter-better-sqlite3`). `undefined` when `handle` carries no provider at all
 * (not a Prisma client: the transaction check then refuses it with the usual message).
 *
 * @throws OutboxError `INVALID_CONFIG` for a provider outboxkit does not write to (`cockroachdb`,
 * `sqlserver`, `mongodb`).
 */
export function prismaDialect(handle: unknown): OutboxDialect | undefined {
  const provider = prismaProvider(handle)
  if (provider === undefined) return undefined
  const dialect =
    (DIALECT_OF_PROVIDER as Record<string, OutboxDialect>)[provider] ?? DIALECT_OF_ADAPTER[provider]
  if (dialect !== undefined) return dialect
  throw new OutboxError(
    'INVALID_CONFIG',
    `publish got a Prisma client for the "${provider}" provider, which outboxkit does not support. Supported providers: "postgresql" (with @prisma/adapter-pg), "mysql" (MySQL 8 / MariaDB 10.6+, with @prisma/adapter-mariadb) and "sqlite" (with @prisma/adapter-better-sqlite3). Nothing was written.`,
    { source: ADAPTER },
  )
}

/**
 * The dialect of a `provider` option of the schema helpers.
 *
 * @throws OutboxError `INVALID_CONFIG` for anything but `'postgresql'`, `'mysql'` or `'sqlite'`.
 */
export function dialectOfProvider(provider: unknown): OutboxDialect {
  const dialect =
    typeof provider === 'string'
      ? (DIALECT_OF_PROVIDER as Record<string, OutboxDialect | undefined>)[provider]
      : undefined
  if (dialect === undefined) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `provider must be "postgresql", "mysql" or "sqlite" (the provider of your datasource block), got ${JSON.stringify(provider)}.`,
      { source: ADAPTER },
    )
  }
  return dialect
}
