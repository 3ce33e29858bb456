import { defineOutbox, migrate, type Outbox, type OutboxBackend } from '@outboxkit/core'
import { afterAll, beforeAll } from 'vitest'
import { mysqlInspector, serverInspector, uniqueTableName } from '../database.js'
import { outboxSql } from '../dialect-sql.js'

/** The columns of the outbox table contract, in the order core's DDL creates them (unordered outbox). */
export const OUTBOX_COLUMNS: readonly string[] = [
  'id',
  'topic',
  'key',
  'payload',
  'headers',
  'state',
  'attempts',
  'available_at',
  'created_at',
  'dedup_key',
  'last_error',
]

/** What {@link useOutboxTable} needs: the server, and the backend that creates the table. */
export interface OutboxTableOptions {
  /** The server of the test databases (`DATABASE_URL` / `MYSQL_URL`). Default `'postgres'`. */
  dialect?: 'postgres' | 'mysql'
  /** The backend that migrates the table (called once, before all tests). */
  backend(): OutboxBackend
  /** Closes that backend once the table is migrated (one the file made only for it). Default false. */
  closeBackend?: boolean
}

/**
 * An outbox on a unique table (`ok_<prefix>_...`) for the test file or `describe` it is called
 * in: migrated before all tests, dropped after all on a connection of its own (so the order of
 * the file's other hooks does not matter). The outbox is defined at once; use its table in tests.
 */
export function useOutboxTable(prefix: string, options: OutboxTableOptions): Outbox {
  const outbox = defineOutbox({ table: uniqueTableName(prefix) })
  beforeAll(async () => {
    const backend = options.backend()
    try {
      await migrate(outbox, backend)
    } finally {
      if (options.closeBackend) await backend.close()
    }
  })
  afterAll(async () => {
    const dialect = options.dialect ?? 'postgres'
    const inspector = dialect === 'mysql' ? mysqlInspector() : serverInspector()
    try {
      await outboxSql(dialect, (text, params) => inspector.query(text, params)).drop(outbox.table.name)
    } finally {
      await inspector.close()
    }
  })
  return outbox
}
