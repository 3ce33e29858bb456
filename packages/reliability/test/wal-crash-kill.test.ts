// The WAL transport (docs/wal.md) under SIGKILL: relay processes read the outbox's replication
// slot while producers publish (about 10 % of their transactions roll back; a share of them on an
// ordered topic, keyed, which takes the table path); every ~2 s the relay that holds the slot is
// SIGKILLed and a replacement started, so a standby takes the slot over each time. Then the
// verdict from the ledger: nothing committed is lost, nothing rolled back appears, and the ordered
// topic's deliveries kept each key's commit order (the producers number each keyed message in its
// key in the business transaction, see ledger-key-order-sql.ts).
import { DIALECTS, observeFor } from '@outboxkit/conformance'
import { afterEach, describe, expect, test } from 'vitest'
import { pollUntil } from '../src/database.js'
import { computeKeyOrder } from '../src/key-order.js'
import { liveRows } from '../src/ledger.js'
import { produce } from '../src/producer.js'
import type { RelayProcess } from '../src/relay-process.js'
import { figuresLine, verdictFigures } from '../src/report.js'
import { computeVerdict, explainedTotal } from '../src/verdict.js'
import { type FleetFixture, fleetFixture } from './support/fleet-fixture.js'

let fixture: FleetFixture | undefined
afterEach(async () => {
  await fixture?.close()
  fixture = undefined
})

/** The relay process whose replication connection holds the slot now, if any. */
async function slotHolder(f: FleetFixture): Promise<RelayProcess | undefined> {
  const rows = await f.db.query<{ application_name: string }>(
    "SELECT application_name FROM pg_stat_replication WHERE application_name LIKE 'okrel_%'",
  )
  const names = new Set(rows.map((r) => r.application_name))
  return f.fleet.running.find((r) => names.has(r.applicationName))
}

const runs = DIALECTS.includes('postgres') && process.env.OUTBOXKIT_WAL_SKIPPED === undefined
const ORDERED = 'ordered'

// The relays read the slot with pgBackend (node-postgres), then with postgresJsBackend (postgres.js).
describe.runIf(runs).each(['pg', 'postgres-js'] as const)(
  'postgres, transport wal, relays on %s',
  (pgDriver) => {
    test('the slot reader SIGKILLed every ~2 s while producers publish (10 % rollbacks, a share on an ordered topic): lost = 0, phantom = 0, commit order kept per key', async () => {
      const t0 = Date.now()
      const f = await fleetFixture('postgres', pgDriver === 'pg' ? 'walkill' : 'walkilljs', {
        transport: 'wal',
        orderedTopics: [ORDERED],
        handler: { sleepMs: [2, 10] },
        pgDriver,
      })
      fixture = f
      await f.fleet.spawnMany(2)
      let producing = true
      const produced = produce({
        db: f.producerDb,
        outbox: f.outbox,
        tables: f.tables,
        producers: 2,
        rollbackRate: 0.1,
        maxBatch: 5,
        ordered: { topic: ORDERED, keys: 20, share: 0.2 },
        keepGoing: () => producing,
      })
      const replacements: Promise<unknown>[] = []
      let holderKills = 0
      for (let round = 0; round < 6; round++) {
        await observeFor(2_000) // the kill cadence of the scenario, not a wait for an outcome
        const victim = await pollUntil(() => slotHolder(f), {
          timeoutMs: 30_000,
          what: 'a relay holding the slot',
        })
        await f.fleet.kill(victim)
        holderKills++
        replacements.push(f.fleet.spawn())
      }
      producing = false
      const producer = await produced
      await Promise.all(replacements)
      const { t } = { t: f.tables }
      const unseen = async () =>
        Number(
          (
            await f.db.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM ${t.produced} p WHERE NOT EXISTS (SELECT 1 FROM ${t.ledger} l WHERE l.id = p.id)`,
            )
          )[0]!.n,
        )
      await pollUntil(async () => (await unseen()) === 0 && (await liveRows(f.db, f.tables)) === 0, {
        timeoutMs: 90_000,
        intervalMs: 200,
        what: 'every committed message delivered',
      })
      await f.fleet.stop()
      const verdict = await computeVerdict(f.db, f.tables)
      const ordered = await computeVerdict(f.db, f.tables, ORDERED)
      const keyOrder = await computeKeyOrder(f.db, f.tables, ORDERED)
      console.log(
        figuresLine(`wal-sigkill-slot-reader-${pgDriver}`, {
          messages: producer.committedMessages + producer.rolledBackMessages,
          holderKills,
          ...verdictFigures(verdict),
          // The ordered topic's own counts (rolledBack above is the run's, both topics).
          ordered: {
            committed: ordered.committed,
            delivered: ordered.delivered,
            lost: ordered.lost,
            phantom: ordered.phantom,
            duplicates: ordered.duplicates,
            explained: explainedTotal(ordered),
            keys: keyOrder.keys,
          },
          firstOutOfOrder: keyOrder.firstOutOfOrder,
          startedAfterLater: keyOrder.startedAfterLater,
          seconds: ((Date.now() - t0) / 1000).toFixed(1),
        }),
      )
      expect(holderKills).toBe(6)
      expect(producer.rolledBackMessages).toBeGreaterThan(0)
      expect(verdict.committed + ordered.committed).toBe(producer.committedMessages)
      expect(verdict.committed).toBeGreaterThan(500)
      for (const v of [verdict, ordered]) {
        expect(v.lost).toBe(0)
        expect(v.phantom).toBe(0)
        expect(v.unknown).toBe(0)
      }
      // Replays after a kill deliver again from the last confirmation (attempts 1 again in WAL mode,
      // docs/wal.md "Limits"): reported, bounded by what was delivered.
      expect(verdict.duplicates).toBeLessThan(verdict.committed)
      // The ordered topic took the table path: its redeliveries are those of the kills, as in the
      // table's crash test, and each key's messages were delivered in commit order.
      expect(ordered.committed).toBeGreaterThan(100)
      expect(keyOrder.messages).toBe(ordered.committed)
      expect(keyOrder.keys).toBe(20)
      expect(ordered.sameAttempt).toBe(0)
      expect(ordered.unexplained).toBe(0)
      expect(ordered.duplicates).toBeLessThanOrEqual(explainedTotal(ordered))
      expect(keyOrder.firstDeliveries).toBe(ordered.committed)
      expect(keyOrder.firstOutOfOrder).toBe(0)
      expect(keyOrder.startedAfterLater).toBe(0)
    }, 240_000)
  },
)
