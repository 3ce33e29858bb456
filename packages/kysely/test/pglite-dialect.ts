import type { PGlite, Transaction as PgliteTransaction } from '@electric-sql/pglite'
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely'

/**
 * A minimal Kysely dialect for PGlite, for tests: queries outside a transaction run on the
 * instance; a transaction runs inside PGlite's own db.transaction(), so PGlite serialises it with
 * everything else on the instance (a relay's claims included).
 */
class PgliteConnection implements DatabaseConnection {
  #tx: PgliteTransaction | undefined
  #end: ((action: 'commit' | 'rollback') => void) | undefined
  #finished: Promise<unknown> | undefined

  constructor(private readonly db: PGlite) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await (this.#tx ?? this.db).query<R>(query.sql, [...query.parameters])
    return {
      rows: result.rows,
      ...(result.affectedRows === undefined ? {} : { numAffectedRows: BigInt(result.affectedRows) }),
    }
  }

  // biome-ignore lint/correctness/useYield: streaming is not supported by this test dialect
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not supported by the PGlite test dialect')
  }

  async begin(settings: TransactionSettings): Promise<void> {
    const action = new Promise<'commit' | 'rollback'>((resolve) => {
      this.#end = resolve
    })
    let started!: () => void
    const ready = new Promise<void>((resolve) => {
      started = resolve
    })
    this.#finished = this.db.transaction(async (tx) => {
      this.#tx = tx
      started()
      if ((await action) === 'rollback') await tx.rollback()
    })
    await Promise.race([ready, this.#finished])
    if (settings.isolationLevel)
      await this.#tx!.query(`set transaction isolation level ${settings.isolationLevel}`)
  }

  async end(action: 'commit' | 'rollback'): Promise<void> {
    this.#end?.(action)
    try {
      await this.#finished
    } finally {
      this.#tx = undefined
      this.#end = undefined
      this.#finished = undefined
    }
  }
}

class PgliteDriver implements Driver {
  constructor(private readonly db: PGlite) {}
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return new PgliteConnection(this.db)
  }
  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    await (connection as PgliteConnection).begin(settings)
  }
  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PgliteConnection).end('commit')
  }
  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PgliteConnection).end('rollback')
  }
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

/** Kysely on a PGlite instance (the instance stays yours: destroy() does not close it). */
export class PgliteDialect implements Dialect {
  constructor(private readonly db: PGlite) {}
  createDriver(): Driver {
    return new PgliteDriver(this.db)
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler()
  }
  createAdapter() {
    return new PostgresAdapter()
  }
  createIntrospector(db: Kysely<any>) {
    return new PostgresIntrospector(db)
  }
}
