import {
  type Inspector,
  mysqlInspector,
  type OutboxDialect,
  type OutboxSql,
  outboxSql,
  removeSqliteFile,
  serverInspector,
  sqliteInspector,
  tempSqliteFile,
  testDatabaseUrl,
  testMysqlUri,
  uniqueTableName,
} from '@outboxkit/conformance'
import { defineOutbox, migrate, type Outbox, type OutboxBackend } from '@outboxkit/core'
import { mysqlBackend } from '@outboxkit/mysql'
import { pgBackend } from '@outboxkit/pg'
import { sqliteBackend } from '@outboxkit/sqlite'
import { afterAll, beforeAll } from 'vitest'

/** One database of the matrix for a dashboard test file: a migrated outbox, its backend, raw SQL. */
export interface DashboardDb {
  readonly dialect: OutboxDialect
  readonly outbox: Outbox
  readonly backend: OutboxBackend
  /** Raw SQL on a connection of its own (seeding and checking rows, never through the dashboard). */
  readonly sql: OutboxSql
  /** A second backend, for a relay (the dashboard's own stays for the dashboard). */
  relayBackend(): OutboxBackend
}

function open(dialect: OutboxDialect, file: string): { backend: () => OutboxBackend; inspector: Inspector } {
  switch (dialect) {
    case 'postgres':
      return {
        backend: () => pgBackend({ connectionString: testDatabaseUrl(), max: 2 }),
        inspector: serverInspector(),
      }
    case 'mysql':
      return {
        backend: () => mysqlBackend({ uri: testMysqlUri(), connectionLimit: 2 }),
        inspector: mysqlInspector(),
      }
    case 'sqlite':
      return { backend: () => sqliteBackend({ filename: file }), inspector: sqliteInspector(file) }
  }
}

/**
 * A fresh outbox table on `dialect` for the calling test file (a file of its own on SQLite),
 * migrated before all tests and dropped after. Read its fields inside tests or hooks.
 */
export function useDashboardDb(dialect: OutboxDialect, prefix: string): DashboardDb {
  const outbox = defineOutbox({ table: uniqueTableName(prefix) })
  const file = tempSqliteFile(prefix)
  let opened: ReturnType<typeof open> | undefined
  let backend: OutboxBackend | undefined
  let sql: OutboxSql | undefined
  const others: OutboxBackend[] = []
  beforeAll(async () => {
    opened = open(dialect, file)
    backend = opened.backend()
    await migrate(outbox, backend)
    const inspector = opened.inspector
    sql = outboxSql(dialect, (text, params) => inspector.query(text, params))
  })
  afterAll(async () => {
    await Promise.all(others.map((b) => b.close()))
    await sql?.drop(outbox.table.name).catch(() => {})
    await backend?.close()
    await opened?.inspector.close()
    if (dialect === 'sqlite') removeSqliteFile(file)
  })
  return {
    dialect,
    outbox,
    get backend() {
      return backend!
    },
    get sql() {
      return sql!
    },
    relayBackend() {
      const b = opened!.backend()
      others.push(b)
      return b
    },
  }
}
