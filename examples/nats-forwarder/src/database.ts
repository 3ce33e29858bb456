// The example's database: embedded PGlite (in memory) by default, or your PostgreSQL at
// DATABASE_URL. The same small interface over each driver's own transaction API.
import { PGlite } from '@electric-sql/pglite'
import type { OutboxBackend, PublishMessage, PublishResult } from '@outboxkit/core'
import * as outboxPg from '@outboxkit/pg'
import * as outboxPglite from '@outboxkit/pglite'
import pg from 'pg'
import { outbox, TABLES } from './schema.js'

/** One open transaction: statements and `publish` both run inside it. */
export interface Transaction {
  query<T>(text: string, params?: unknown[]): Promise<T[]>
  publish(message: PublishMessage<typeof outbox>): Promise<PublishResult>
}

/** What the example needs from a database. */
export interface Database {
  readonly label: string
  readonly backend: OutboxBackend
  /** Runs `work` in one transaction: commits when it resolves, rolls back when it throws. */
  transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T>
  query<T>(text: string, params?: unknown[]): Promise<T[]>
  close(): Promise<void>
}

async function openPglite(): Promise<Database> {
  const db = await PGlite.create()
  return {
    label: 'embedded PGlite (in memory)',
    backend: outboxPglite.pgliteBackend(db),
    transaction: (work) =>
      db.transaction((tx) =>
        work({
          query: async (text, params) => (await tx.query(text, params)).rows as never[],
          publish: (message) => outboxPglite.publish(outbox, tx, message),
        }),
      ),
    query: async <T>(text: string, params?: unknown[]) => (await db.query<T>(text, params)).rows,
    close: () => db.close(),
  }
}

function openPostgres(url: string): Database {
  const pool = new pg.Pool({ connectionString: url, max: 4 })
  const { host, pathname } = new URL(url)
  return {
    label: `PostgreSQL at ${host}${pathname}`,
    backend: outboxPg.pgBackend({ pool }),
    async transaction(work) {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        const result = await work({
          query: async (text, params) => (await client.query(text, params)).rows,
          publish: (message) => outboxPg.publish(outbox, client, message),
        })
        await client.query('COMMIT')
        return result
      } catch (error) {
        await client.query('ROLLBACK')
        throw error
      } finally {
        client.release()
      }
    },
    query: async <T>(text: string, params?: unknown[]) => (await pool.query(text, params)).rows as T[],
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${Object.values(TABLES).join(', ')}`)
      await pool.end()
    },
  }
}

/** PGlite, or PostgreSQL when `databaseUrl` is given. */
export function openDatabase(databaseUrl: string | undefined): Promise<Database> | Database {
  return databaseUrl ? openPostgres(databaseUrl) : openPglite()
}
