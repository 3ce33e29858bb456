// Scenario 7 on MariaDB: the server restarts twice during a drain on mysqlBackend, with producers
// publishing through @outboxkit/mysql in mysql2 transactions. Runs on a DEDICATED server
// (mariadb-install-db into a temp dir, mariadbd on its own port) so the shared server at 3306 and
// the other tests are not disturbed.
import { mysqlBackend } from '@outboxkit/mysql'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type LedgerDb, openLedgerDb } from '../src/ledger-db.js'
import { figuresLine } from '../src/report.js'
import {
  type DedicatedMariadb,
  dedicatedMariadbUnavailable,
  startDedicatedMariadb,
} from './support/mariadb-server.js'
import { restartFigures, restartsDuringDrain } from './support/restart-drain.js'

const unavailable = await dedicatedMariadbUnavailable()
if (unavailable) console.warn(`[reliability] mariadb-restart skipped: ${unavailable}`)

describe.skipIf(unavailable !== undefined)('MariaDB server restart during a drain', () => {
  let server: DedicatedMariadb
  let db: LedgerDb
  beforeAll(async () => {
    server = await startDedicatedMariadb()
    db = await openLedgerDb({ dialect: 'mysql', url: server.url }, { max: 12 })
  }, 120_000)
  afterAll(async () => {
    await db?.close().catch(() => {})
    await server?.destroy()
  }, 60_000)

  test('mariadbd restarted twice while producers commit and roll back and a relay drains: lost = 0, phantom = 0, no relay stuck', async () => {
    const r = await restartsDuringDrain({
      name: 'mariadb',
      db,
      backend: mysqlBackend({ uri: server.url, commandTimeoutMs: 5_000, connectionLimit: 4 }),
      restart: () => server.restart(),
      listen: false,
    })
    const v = r.verdict
    console.log(figuresLine('server-restart-twice-mariadb', restartFigures(r)))
    // Both restarts landed mid-drain, with producers committing before and after them.
    expect(r.liveAtRestarts.every((n) => n > 0)).toBe(true)
    expect(r.deliveredAtRestarts[1]!).toBeGreaterThan(r.deliveredAtRestarts[0]!)
    expect(r.committedAfterLastRestart).toBeGreaterThan(0)
    expect(v.rolledBack).toBeGreaterThan(0)
    // Nothing lost, nothing phantom, and no relay stuck: drained within the bound, still running.
    expect(v.committed).toBeGreaterThanOrEqual(r.producer.committedMessages)
    expect(v.committed).toBeLessThanOrEqual(r.producer.committedMessages + r.producer.commitErrorMessages)
    expect(v.lost).toBe(0)
    expect(v.phantom).toBe(0)
    expect(v.unknown).toBe(0)
    expect(v.sameAttempt).toBe(0)
    expect(v.live).toBe(0)
    expect(v.dead).toBe(0)
    expect(r.relayRunning).toBe(true)
    // Redeliveries only for what was in flight at a restart (claimed batches, unconfirmed settles).
    expect(v.duplicates).toBeLessThanOrEqual(60)
  }, 150_000)
})
