import type { Outbox, OutboxBackend } from '@outboxkit/core'
import { migrate } from '@outboxkit/core'
import { afterAll, beforeAll } from 'vitest'
import type { Inspector } from '../database.js'
import { type OutboxDialect, outboxSql } from '../dialect-sql.js'

/** What {@link useOutboxTable} needs: how to create the table, and how to drop it. */
export interface OutboxTableOptions {
  /** The dialect of `inspector`'s SQL. Default `'postgres'`. */
  dialect?: OutboxDialect
  /** Raw SQL on a connection of the file's own: drops the table after all tests. */
  inspector: Inspector
  /** The backend that migrates the table (called once, before all tests). */
  backend(): OutboxBackend
  /** Closes that backend once the table is migrated (one the file made only for it). Default false. */
  closeBackend?: boolean
}

/**
 * The table of `outbox` (give it a unique name) for the test file or `describe` it is called in:
 * migrated before all tests, dropped after all. Vitest runs after-hooks in reverse order, so
 * register the hook that closes `inspector` before calling this.
 */
export function useOutboxTable(outbox: Outbox<any>, options: OutboxTableOptions): void {
  beforeAll(async () => {
    const backend = options.backend()
    try {
      await migrate(outbox, backend)
    } finally {
      if (options.closeBackend) await backend.close()
    }
  })
  afterAll(() =>
    outboxSql(options.dialect ?? 'postgres', (text, params) => options.inspector.query(text, params)).drop(
      outbox.table.name,
    ),
  )
}
