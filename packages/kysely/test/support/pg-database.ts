import { type RefusedHandle, serverInspector } from '@outboxkit/conformance'
import { pgBackend } from '@outboxkit/pg'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { KyselyDatabase } from './conformance.js'

/** What a conformance file adds to {@link pgKyselyDatabase}: its refused handles past the root instance, and what to release first at teardown. */
export interface PgKyselyExtras {
  refused(): Promise<RefusedHandle[]>
  release?(): void
}

/**
 * A Kysely on a pg pool (max 25) at `url`, with `pgBackend` on the same pool and a server
 * inspector; the root Kysely instance is always a refused handle, `extras` adds the rest.
 */
export function pgKyselyDatabase(
  url: string,
  extras: (db: Kysely<any>, pool: pg.Pool) => PgKyselyExtras,
): KyselyDatabase {
  const pool = new pg.Pool({ connectionString: url, max: 25 })
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) })
  const inspector = serverInspector()
  const more = extras(db, pool)
  return {
    db,
    backend: pgBackend({ pool }),
    inspect: (text, params) => inspector.query(text, params),
    refusedHandles: async () => [
      { label: 'the root Kysely instance', handle: db },
      ...(await more.refused()),
    ],
    async teardown() {
      more.release?.()
      await inspector.close()
      await db.destroy()
    },
  }
}
