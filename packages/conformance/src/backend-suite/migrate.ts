import { defineOutbox, migrate } from '@outboxkit/core'
import { test } from 'vitest'
import { uniqueTableName } from '../database.js'
import { expectOutboxIndexes } from './outbox-indexes.js'
import type { BackendSuite } from './suite.js'

/** Backend tests: migrate is idempotent, safe concurrently, and creates the outbox indexes. */
export function registerMigrateTests(suite: BackendSuite): void {
  const { name } = suite
  test('migrate is idempotent and safe to run concurrently', async () => {
    const { ctx, sql, dialect, backend } = suite.opened
    const fresh = defineOutbox({ table: uniqueTableName(`mig_${name}`) })
    const others = [ctx.backend(), ctx.backend()]
    try {
      await Promise.all([migrate(fresh, backend), migrate(fresh, others[0]!), migrate(fresh, others[1]!)])
      await migrate(fresh, backend)
      expectOutboxIndexes(dialect, await sql.indexes(fresh.table.name))
    } finally {
      await sql.drop(fresh.table.name)
      await Promise.all(others.map((b) => b.close()))
    }
  })
}
