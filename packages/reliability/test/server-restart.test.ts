// Scenario 7: the PostgreSQL server restarts during a drain. Runs on a DEDICATED cluster (initdb
// into a temp dir, its own port) so the shared server and the other tests are not disturbed.
import { waitFor } from '@outboxkit/conformance'
import { pgBackend } from '@outboxkit/pg'
import { describe, expect, test } from 'vitest'
import { openLedgerDb } from '../src/ledger-db.js'
import { figuresLine } from '../src/report.js'
import { skippedBecause, useDedicatedServer } from './support/dedicated-server.js'
import { dedicatedClusterUnavailable, startDedicatedCluster } from './support/pg-cluster.js'
import { expectRestartsSurvived, restartFigures, restartsDuringDrain } from './support/restart-drain.js'
import { messages, World } from './support/world.js'

const unavailable = await skippedBecause('server-restart', dedicatedClusterUnavailable)

describe.skipIf(unavailable !== undefined)('PostgreSQL server restart during a drain', () => {
  const dedicated = useDedicatedServer(startDedicatedCluster, (cluster) => new World(cluster.url))

  test.each(['fast', 'immediate'] as const)(
    'pg_ctl stop -m %s and start mid-drain: every message committed before is delivered after',
    async (mode) => {
      const cluster = dedicated.server()
      const w = dedicated.opened()
      const outbox = await w.outbox(`restart_${mode}`)
      const seen = new Map<string, number>()
      const relay = w.relay(outbox, {
        backend: w.backend({ commandTimeoutMs: 5_000, max: 4 }),
        handlers: {
          t: async (m) => {
            seen.set(m.id, (seen.get(m.id) ?? 0) + 1)
            await new Promise((r) => setTimeout(r, 20))
          },
        },
        concurrency: 5,
        batchSize: 5,
        pollIntervalMs: 250,
        leaseMs: 3_000,
      })
      const errors: string[] = []
      relay.on('error', (e) => errors.push(`${e.during}:${(e.error as { code?: string }).code}`))
      const published = await w.publish(outbox, messages(400))
      await relay.start()
      await waitFor(() => seen.size >= 50, { timeoutMs: 30_000, what: 'the drain to be under way' })
      const deliveredBefore = seen.size
      const t0 = Date.now()
      const errorsBefore = errors.length
      await cluster.stop(mode)
      const downAt = Date.now()
      // Stay down until the relay has felt it (a failed claim, settle or LISTEN).
      await waitFor(() => errors.length > errorsBefore, {
        timeoutMs: 30_000,
        what: 'the relay to see the outage',
      })
      await cluster.start()
      const downMs = Date.now() - downAt
      await waitFor(async () => (await w.live(outbox)) === 0, {
        timeoutMs: 90_000,
        intervalMs: 200,
        what: 'the drain after the restart',
      })
      const lost = published.filter((p) => !seen.has(p.id)).length
      const duplicates = [...seen.values()].reduce((a, n) => a + n - 1, 0)
      console.log(
        figuresLine(`server-restart-${mode}`, {
          messages: published.length,
          deliveredBeforeRestart: deliveredBefore,
          downMs,
          recoveredInMs: Date.now() - t0,
          lost,
          duplicates,
          relayErrors: errors.length,
        }),
      )
      expect(deliveredBefore).toBeLessThan(published.length) // the restart did land mid-drain
      expect(errors.length).toBeGreaterThan(0) // and the relay did see it
      expect(lost).toBe(0)
      expect(await w.rows(outbox)).toEqual([])
      expect(relay.running).toBe(true)
      // Duplicates only for what was in flight (at most `concurrency` handlers, plus settles
      // the server never confirmed): bounded by a couple of batches.
      expect(duplicates).toBeLessThanOrEqual(20)
    },
    150_000,
  )
  test('pg_ctl restart -m fast twice while producers commit and roll back and a relay drains with notify on: lost = 0, phantom = 0, no relay stuck', async () => {
    const cluster = dedicated.server()
    const db = await openLedgerDb({ dialect: 'postgres', url: cluster.url }, { max: 12 })
    try {
      const r = await restartsDuringDrain({
        name: 'pg',
        db,
        backend: pgBackend({ connectionString: cluster.url, commandTimeoutMs: 5_000, max: 4 }),
        restart: () => cluster.restart('fast'),
        listen: true,
      })
      console.log(figuresLine('server-restart-twice-postgres', restartFigures(r)))
      expectRestartsSurvived(r)
      // The LISTEN connection was reported lost and re-established at each restart.
      expect(r.listenLost).toBeGreaterThanOrEqual(2)
      expect(r.listenReestablished).toBeGreaterThanOrEqual(2)
      expect(r.relayErrors.listen ?? 0).toBeGreaterThanOrEqual(2)
    } finally {
      await db.close()
    }
  }, 150_000)
})
