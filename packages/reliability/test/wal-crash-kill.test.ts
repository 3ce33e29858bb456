// The WAL transport (docs/wal.md) under SIGKILL: relay processes read the outbox's replication
// slot while producers publish (about 10 % of their transactions roll back); every ~2 s the relay
// that holds the slot is SIGKILLed and a replacement started, so a standby takes the slot over each
// time. Then the verdict from the ledger: nothing committed is lost, nothing rolled back appears.
import { DIALECTS, observeFor } from '@outboxkit/conformance'
import { afterEach, describe, expect, test } from 'vitest'
import { pollUntil } from '../src/database.js'
import { liveRows } from '../src/ledger.js'
import { produce } from '../src/producer.js'
import type { RelayProcess } from '../src/relay-process.js'
import { figuresLine, verdictFigures } from '../src/report.js'
import { computeVerdict } from '../src/verdict.js'
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

describe.runIf(runs)('postgres, transport wal', () => {
  test('the slot reader SIGKILLed every ~2 s while producers publish (10 % rollbacks): lost = 0, phantom = 0', async () => {
    const t0 = Date.now()
    const f = await fleetFixture('postgres', 'walkill', { transport: 'wal', handler: { sleepMs: [2, 10] } })
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
    console.log(
      figuresLine('wal-sigkill-slot-reader', {
        messages: producer.committedMessages + producer.rolledBackMessages,
        holderKills,
        ...verdictFigures(verdict),
        seconds: ((Date.now() - t0) / 1000).toFixed(1),
      }),
    )
    expect(holderKills).toBe(6)
    expect(producer.rolledBackMessages).toBeGreaterThan(0)
    expect(verdict.committed).toBe(producer.committedMessages)
    expect(verdict.committed).toBeGreaterThan(500)
    expect(verdict.lost).toBe(0)
    expect(verdict.phantom).toBe(0)
    expect(verdict.unknown).toBe(0)
    // Replays after a kill deliver again from the last confirmation (attempts 1 again in WAL mode,
    // docs/wal.md "Limits"): reported, bounded by what was delivered.
    expect(verdict.duplicates).toBeLessThan(verdict.committed)
  }, 240_000)
})
