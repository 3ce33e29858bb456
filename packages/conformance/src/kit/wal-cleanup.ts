import type { Outbox } from '@outboxkit/core'
import { walNames } from '@outboxkit/core/adapter'
import { waitFor } from '../database.js'

/** The slice of a `pg.Pool` (or client) that {@link dropWalOutbox} uses. */
export interface WalCleanupQueryable {
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }>
}

/**
 * Drops a WAL outbox's replication slot (once no walsender holds it: a stopped relay's may hold it
 * a moment longer), its publication, its dispatch mark's table and its outbox table, by raw SQL.
 * The server has few slots (`max_replication_slots`), shared by every test file running at once:
 * drop each test's slot after the test, not after the file.
 */
export async function dropWalOutbox(db: WalCleanupQueryable, outbox: Outbox): Promise<void> {
  const { slot, markTable } = walNames(outbox.table)
  await waitFor(
    async () =>
      (await db.query('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1 AND active', [slot])).rows
        .length === 0,
    { what: `${slot} released` },
  )
  await db.query(
    'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1',
    [slot],
  )
  await db.query(`DROP PUBLICATION IF EXISTS "${slot}"`)
  await db.query(`DROP TABLE IF EXISTS "${outbox.table.name}", "${markTable}"`)
}
