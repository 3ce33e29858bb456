import { defineOutbox, isOutboxError, migrate } from '@outboxkit/core'
import { publish, publishMany } from '@outboxkit/kysely'
import { sqliteBackend } from '@outboxkit/sqlite'
import Database from 'better-sqlite3'
import {
  type DatabaseConnection,
  type Dialect,
  type DialectAdapter,
  type Driver,
  Kysely,
  MssqlAdapter,
  MssqlQueryCompiler,
  type QueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteDialect,
  SqliteIntrospector,
} from 'kysely'
import { afterAll, describe, expect, test } from 'vitest'

/** A dialect of your own around SQLite whose adapter only delegates to Kysely's (not a subclass). */
class WrappingSqliteDialect implements Dialect {
  readonly #inner: SqliteDialect
  constructor(database: Database.Database) {
    this.#inner = new SqliteDialect({ database })
  }
  createDriver(): Driver {
    return this.#inner.createDriver()
  }
  createQueryCompiler(): QueryCompiler {
    return this.#inner.createQueryCompiler()
  }
  createAdapter(): DialectAdapter {
    const inner = new SqliteAdapter()
    return {
      supportsCreateIfNotExists: inner.supportsCreateIfNotExists,
      supportsTransactionalDdl: inner.supportsTransactionalDdl,
      supportsReturning: inner.supportsReturning,
      acquireMigrationLock: (db, options) => inner.acquireMigrationLock(db, options),
      releaseMigrationLock: (db, options) => inner.releaseMigrationLock(db, options),
    }
  }
  createIntrospector(db: Kysely<any>) {
    return new SqliteIntrospector(db)
  }
}

/** A driver that connects to nothing: enough to open a Kysely transaction on any adapter. */
class NullDriver implements Driver {
  readonly sent: string[] = []
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    const sent = this.sent
    return {
      async executeQuery<R>(query: { sql: string }): Promise<QueryResult<R>> {
        sent.push(query.sql)
        return { rows: [] }
      },
      // biome-ignore lint/correctness/useYield: nothing to stream
      async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
        throw new Error('not supported')
      },
    }
  }
  async beginTransaction(): Promise<void> {}
  async commitTransaction(): Promise<void> {}
  async rollbackTransaction(): Promise<void> {}
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

function nullDialect(driver: NullDriver, adapter: () => DialectAdapter): Dialect {
  return {
    createDriver: () => driver,
    createQueryCompiler: () => new MssqlQueryCompiler(),
    createAdapter: adapter,
    createIntrospector: () => {
      throw new Error('not supported')
    },
  }
}

const database = new Database(':memory:')
afterAll(() => database.close())

describe('the dialect comes from the transaction', () => {
  test('a dialect whose adapter wraps SqliteAdapter is SQLite, by the SQL its compiler writes', async () => {
    const outbox = defineOutbox({ table: 'wrapped_outbox' })
    await migrate(outbox, sqliteBackend(database))
    const db = new Kysely<any>({ dialect: new WrappingSqliteDialect(database) })
    const [a, b] = await db.transaction().execute((trx) =>
      publishMany(outbox, trx, [
        { topic: 'wrapped', payload: 1, dedupKey: 'w-1' },
        { topic: 'wrapped', payload: 2, dedupKey: 'w-1' },
      ]),
    )
    expect(a!.published).toBe(true)
    expect(b).toEqual({ id: a!.id, published: false })
    const rows = database.prepare(`SELECT id, payload FROM wrapped_outbox`).all()
    expect(rows).toEqual([{ id: a!.id, payload: '1' }])
  })

  test('MS SQL Server (Kysely MssqlAdapter) is refused with INVALID_CONFIG before anything is sent', async () => {
    const outbox = defineOutbox({ table: 'outbox' })
    for (const adapter of [() => new MssqlAdapter(), () => ({ ...new MssqlAdapter() }) as DialectAdapter]) {
      const driver = new NullDriver()
      const db = new Kysely<any>({ dialect: nullDialect(driver, adapter) })
      await db.transaction().execute(async (trx) => {
        for (const attempt of [
          () => publish(outbox, trx, { topic: 't', payload: 1 }),
          () => publishMany(outbox, trx, [{ topic: 't', payload: 1 }]),
        ]) {
          const err = await attempt().catch((e: unknown) => e)
          expect(isOutboxError(err, 'INVALID_CONFIG'), String(err)).toBe(true)
          expect((err as Error).message).toMatch(
            /^\[outboxkit\] \[kysely\] publish supports Kysely's PostgreSQL, MySQL and SQLite dialects, got a transaction whose dialect adapter is /,
          )
        }
      })
      expect(driver.sent).toEqual([])
    }
  })

  test('a handle that is not a transaction is refused as such, whatever its dialect', async () => {
    const outbox = defineOutbox({ table: 'outbox' })
    const driver = new NullDriver()
    const db = new Kysely<any>({ dialect: nullDialect(driver, () => new MssqlAdapter()) })
    const err = await publish(outbox, db as never, { topic: 't', payload: 1 }).catch((e: unknown) => e)
    expect(isOutboxError(err, 'NOT_IN_TRANSACTION'), String(err)).toBe(true)
    expect(driver.sent).toEqual([])
  })
})
