// A PostgreSQL outbox of one forwarder test: its own table in the test database, messages committed one
// transaction each, dropped at the end.

import { defineOutbox, migrate, type Outbox } from '@outboxkit/core'
import { pgBackend, publish } from '@outboxkit/pg'
import pg from 'pg'
import { testDatabaseUrl, uniqueTableName } from '../database.js'

/** A committed message: its id and key. */
export interface Committed {
  id: string
  key: string | null
}

/** The test's outbox, backend and pool. */
export interface PgOutbox {
  readonly outbox: Outbox
  readonly backend: ReturnType<typeof pgBackend>
  readonly pool: pg.Pool
  /** Commits one message per payload, in order, each in its own transaction. */
  commit(topic: string, items: { key: string | null; payload: unknown }[]): Promise<Committed[]>
  drop(): Promise<void>
}

/** Creates and migrates an outbox table named after `prefix`, with `orderedTopics`. */
export async function createPgOutbox(prefix: string, orderedTopics: string[] = []): Promise<PgOutbox> {
  const table = uniqueTableName(prefix)
  const outbox = defineOutbox({ table, orderedTopics })
  const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 })
  const backend = pgBackend({ pool })
  await migrate(outbox, backend)
  return {
    outbox,
    backend,
    pool,
    async commit(topic, items) {
      const out: Committed[] = []
      for (const { key, payload } of items) {
        const client = await pool.connect()
        try {
          await client.query('BEGIN')
          const { id } = await publish(outbox, client, { topic, key, payload })
          await client.query('COMMIT')
          out.push({ id, key })
        } finally {
          client.release()
        }
      }
      return out
    },
    async drop() {
      await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {})
      await pool.end()
    },
  }
}
