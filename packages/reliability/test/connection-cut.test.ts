// Scenario 5: pg_terminate_backend on the relay's pool connections and its LISTEN connection
// (found by application_name). The relay reconnects, delivery continues, nothing is lost.
import { waitFor } from '@outboxkit/conformance'
import { afterAll, afterEach, expect, test } from 'vitest'
import { figuresLine } from '../src/report.js'
import { messages, World } from './support/world.js'

const w = new World()
afterEach(() => w.cleanup())
afterAll(() => w.close())

let apps = 0
const appName = () => `okrel_cut_${process.pid}_${++apps}`

/** Terminates every server connection with `application_name`; returns their pids. */
async function cut(name: string): Promise<number[]> {
  const rows = await w.query<{ pid: number }>(
    `SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`,
    [name],
  )
  return rows.map((r) => r.pid)
}

/** Server pids of the LISTEN connection(s) with `application_name`. */
async function listeners(name: string): Promise<number[]> {
  const rows = await w.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'`,
    [name],
  )
  return rows.map((r) => r.pid)
}

test('after its pool and LISTEN connections are terminated, the relay reconnects and NOTIFY wakes it again', async () => {
  const outbox = await w.outbox('cut_listen')
  const name = appName()
  const delivered = new Set<string>()
  const relay = w.relay(outbox, {
    backend: w.backend({ application_name: name }),
    handlers: { t: (m) => void delivered.add(m.id) },
    // A poll this slow cannot explain a delivery within the test: only a NOTIFY can.
    pollIntervalMs: 600_000,
    notify: true,
  })
  await relay.start()
  const [before] = await waitFor(() => listeners(name).then((l) => (l.length > 0 ? l : undefined)), {
    what: 'the LISTEN connection',
  })
  const first = await w.publish(outbox, messages(10))
  await waitFor(() => first.every((p) => delivered.has(p.id)), { timeoutMs: 20_000, what: 'the first batch' })

  const killed = await cut(name)
  expect(killed).toContain(before)
  expect(killed.length).toBeGreaterThanOrEqual(2) // the LISTEN connection and at least one pooled one
  const [after] = await waitFor(
    () => listeners(name).then((l) => (l.some((p) => !killed.includes(p)) ? l : undefined)),
    { timeoutMs: 30_000, what: 'a new LISTEN connection' },
  )
  expect(killed).not.toContain(after)
  const second = await w.publish(outbox, messages(10))
  await waitFor(() => second.every((p) => delivered.has(p.id)), {
    timeoutMs: 30_000,
    what: 'the batch published after the cut',
  })
  await waitFor(async () => (await w.rows(outbox)).length === 0, { what: 'every row settled' })
  const errors = relay.stats.errors
  console.log(
    figuresLine('cut-listen', { terminated: killed.length, messages: 20, lost: 20 - delivered.size, errors }),
  )
})

test('connections cut again and again during a drain: nothing lost', async () => {
  const outbox = await w.outbox('cut_drain')
  const name = appName()
  const seen = new Map<string, number>()
  const relay = w.relay(outbox, {
    backend: w.backend({ application_name: name, max: 4 }),
    handlers: {
      t: async (m) => {
        seen.set(m.id, (seen.get(m.id) ?? 0) + 1)
        await new Promise((r) => setTimeout(r, 20)) // keeps the drain long enough for several cuts
      },
    },
    concurrency: 10,
    batchSize: 10,
    pollIntervalMs: 500,
    leaseMs: 3_000,
    notify: true,
  })
  const errors: string[] = []
  relay.on('error', (e) => errors.push(e.during))
  const published = await w.publish(outbox, messages(600))
  await relay.start()
  let cuts = 0
  let terminated = 0
  while ((await w.live(outbox)) > 0 && cuts < 15) {
    const pids = await cut(name)
    if (pids.length > 0) cuts++
    terminated += pids.length
    await new Promise((r) => setTimeout(r, 150)) // chaos pacing, not synchronisation
  }
  await waitFor(async () => (await w.live(outbox)) === 0, { timeoutMs: 90_000, what: 'the drain' })
  const lost = published.filter((p) => !seen.has(p.id)).length
  const duplicates = [...seen.values()].reduce((a, n) => a + n - 1, 0)
  console.log(
    figuresLine('cut-drain', {
      messages: published.length,
      cuts,
      connectionsTerminated: terminated,
      lost,
      duplicates,
      relayErrors: errors.length,
    }),
  )
  expect(cuts).toBeGreaterThanOrEqual(3)
  expect(lost).toBe(0)
  expect(await w.rows(outbox)).toEqual([])
  expect(relay.running).toBe(true)
}, 120_000)
