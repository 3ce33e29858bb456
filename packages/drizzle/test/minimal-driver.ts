import { entityKind, type Query, sql } from 'drizzle-orm'
import {
  PgDatabase,
  PgDialect,
  PgPreparedQuery,
  type PgQueryResultHKT,
  PgSession,
  PgTransaction,
  type PreparedQueryConfig,
} from 'drizzle-orm/pg-core'
import type pg from 'pg'

/**
 * A Drizzle PostgreSQL driver @outboxkit/drizzle does not know (its own entity kinds), running each
 * query on one pg client with no transaction state read: how a third-party Drizzle driver looks.
 */
interface MinimalHKT extends PgQueryResultHKT {
  type: { rows: unknown[] }
}

class MinimalPreparedQuery extends PgPreparedQuery<PreparedQueryConfig> {
  static override readonly [entityKind]: string = 'MinimalPreparedQuery'
  constructor(
    private readonly client: pg.ClientBase,
    query: Query,
  ) {
    super(query, undefined, undefined)
  }
  override async execute(): Promise<unknown> {
    const { sql: text, params } = this.getQuery()
    return this.client.query(text, params)
  }
  /** @internal */
  isResponseInArrayMode(): boolean {
    return false
  }
}

export class MinimalSession extends PgSession<MinimalHKT> {
  static override readonly [entityKind]: string = 'MinimalSession'
  constructor(
    readonly client: pg.ClientBase,
    dialect: PgDialect,
  ) {
    super(dialect)
  }
  prepareQuery<T extends PreparedQueryConfig>(query: Query): PgPreparedQuery<T> {
    return new MinimalPreparedQuery(this.client, query) as unknown as PgPreparedQuery<T>
  }
  override async transaction<T>(fn: (tx: MinimalTransaction) => Promise<T>): Promise<T> {
    const tx = new MinimalTransaction(this.dialect, this, undefined)
    await tx.execute(sql`begin`)
    try {
      const result = await fn(tx)
      await tx.execute(sql`commit`)
      return result
    } catch (err) {
      await tx.execute(sql`rollback`)
      throw err
    }
  }
}

export class MinimalTransaction extends PgTransaction<MinimalHKT> {
  static override readonly [entityKind]: string = 'MinimalTransaction'
  override async transaction<T>(fn: (tx: MinimalTransaction) => Promise<T>): Promise<T> {
    const name = `sp${this.nestedIndex + 1}`
    const { dialect, session } = this as unknown as { dialect: PgDialect; session: MinimalSession }
    const tx = new MinimalTransaction(dialect, session, undefined, this.nestedIndex + 1)
    await tx.execute(sql.raw(`savepoint ${name}`))
    try {
      const result = await fn(tx)
      await tx.execute(sql.raw(`release savepoint ${name}`))
      return result
    } catch (err) {
      await tx.execute(sql.raw(`rollback to savepoint ${name}`))
      throw err
    }
  }
}

/** A Drizzle database on one pg client, through the minimal driver. */
export function minimalDrizzle(client: pg.ClientBase): PgDatabase<MinimalHKT> {
  const dialect = new PgDialect()
  return new PgDatabase(dialect, new MinimalSession(client, dialect), undefined)
}
