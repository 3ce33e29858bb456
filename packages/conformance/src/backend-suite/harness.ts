import type { Outbox, OutboxBackend } from '@outboxkit/core'
import type { OutboxDialect } from '../dialect-sql.js'

/** What a backend's test file gives {@link runBackendConformance}. */
export interface BackendHarness {
  /** Backend name, e.g. `'pg'`. */
  name: string
  /** Opens the backend under test plus a raw-SQL inspector on a separate connection. */
  setup(): Promise<BackendContext>
}

/** The backend under test and how the suite looks at its database. */
export interface BackendContext {
  /** The database's SQL dialect: how the suite writes its raw SQL. Default `'postgres'`. */
  dialect?: OutboxDialect
  /** Creates a fresh backend instance (called for each simulated relay). */
  backend(): OutboxBackend
  /**
   * Raw SQL outside the backend under test (PGlite: the same instance), written for
   * {@link BackendContext.dialect} with its own placeholders (`$1` PostgreSQL, `?` MySQL and
   * SQLite); returns plain rows.
   */
  inspect(text: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  /** Whether `listen` must work (PostgreSQL: yes; SQLite: the in-process wake; MySQL: no). */
  supportsListen: boolean
  /**
   * What wakes `listen` on `outbox.channel`: PostgreSQL's default is `pg_notify` through
   * `inspect`; other dialects with `supportsListen` must give it (SQLite: a committed publish in
   * this process).
   */
  wake?(outbox: Outbox): Promise<void>
  teardown(): Promise<void>
}
