/**
 * The proof of per-key ordering: many producers, three relays (killed and replaced while they
 * work), random handler failures, 1000 keys. Each producer writes its message and a ledger row in
 * the same transaction; the ledger numbers the rows of a key through a per-key counter row whose
 * lock is held to commit, so the ledger's numbering per key is the commit order, independent of
 * outboxkit. Every key's deliveries must follow it, one at a time.
 */
import { uniqueTableName, waitFor } from '@outboxkit/conformance'
import { type DeliveredMessage, type Outbox, type Relay, Retry } from '@outboxkit/core'
import { publish, publishMany } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, expect, test } from 'vitest'
import { Harness, tableSql } from './support/harness.js'

const h = new Harness()
const producersPool = new pg.Pool({ connectionString: h.url, max: 16 })
producersPool.on('error', () => {})
const ledger = uniqueTableName('core_ord_ledger')
afterAll(async () => {
  await producersPool.end()
  await h.query(`DROP TABLE IF EXISTS ${ledger}, ${ledger}_counter`).catch(() => {})
  await h.close()
})

const KEYS = 1_000
const HOT_KEYS = 20
const PRODUCERS = 12
const TRANSACTIONS_PER_PRODUCER = 220
const RELAYS = 3
const TOPIC = 'ledger.entry'

/** A seeded PRNG (mulberry32), so a failure can be replayed with the printed seed. */
function prng(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function append<T>(map: Map<string, T[]>, key: string, value: T) {
  const list = map.get(key)
  if (list) list.push(value)
  else map.set(key, [value])
}

interface Start {
  key: string
  id: string
  attempts: number
  outcome?: 'ok' | 'failed' | 'aborted'
}

test('every key is delivered in commit order, one message at a time, across producers, failures and relay kills', async () => {
  const seed = Number(process.env.LEDGER_SEED ?? Date.now() % 1_000_000)
  const random = prng(seed)
  const outbox = (await h.outbox('ord_ledger', { orderedTopics: [TOPIC], notify: false })) as Outbox
  await h.query(
    `CREATE TABLE ${ledger} (key text NOT NULL, n int NOT NULL, msg_id uuid NOT NULL, PRIMARY KEY (key, n))`,
  )
  await h.query(`CREATE TABLE ${ledger}_counter (key text PRIMARY KEY, n int NOT NULL DEFAULT 0)`)
  await h.query(
    `INSERT INTO ${ledger}_counter (key) SELECT 'key-' || i FROM generate_series(0, ${KEYS - 1}) AS i`,
  )

  // --- handlers: record every start, check one-at-a-time per key, fail at random
  const starts: Start[] = []
  const running = new Map<string, Start>()
  const overlaps: string[] = []
  let failures = 0
  let aborts = 0
  const handler = async (m: DeliveredMessage, { signal }: { signal: AbortSignal }) => {
    const key = m.key!
    const start: Start = { key, id: m.id, attempts: m.attempts }
    starts.push(start)
    const other = running.get(key)
    if (other) overlaps.push(`${key}: ${m.id} started while ${other.id} ran`)
    running.set(key, start)
    const done = (outcome: Start['outcome']) => {
      start.outcome ??= outcome
      if (running.get(key) === start) running.delete(key)
    }
    const onAbort = () => {
      aborts++
      done('aborted')
    }
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      // Some real asynchronous work (a few slow ones), so relays are killed with handlers in flight.
      const workMs = random() < 0.15 ? 30 + Math.floor(random() * 50) : Math.floor(random() * 4)
      await new Promise((r) => setTimeout(r, workMs))
      if (signal.aborted) throw signal.reason
      const roll = random()
      if (roll < 0.1) {
        failures++
        done('failed')
        throw new Error('random handler failure')
      }
      if (roll < 0.13) {
        failures++
        done('failed')
        throw new Retry({ delayMs: 20 })
      }
      done('ok')
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }
  const relays: Relay[] = []
  const newRelay = async () => {
    const relay = h.relay(outbox, {
      handlers: { [TOPIC]: handler },
      concurrency: 20,
      pollIntervalMs: 50,
      leaseMs: 1_000,
      maxAttempts: 100,
      retry: { baseMs: 5, maxMs: 40 },
      notify: false,
    })
    await relay.start()
    return relay
  }
  for (let i = 0; i < RELAYS; i++) relays.push(await newRelay())

  // --- producers: message and ledger row in one transaction; some roll back
  // Half the messages go to a few hot keys (many concurrent producers per key), the other half
  // round-robin over all keys, so every one of the 1000 keys gets messages.
  let roundRobin = 0
  const pickKey = () => `key-${random() < 0.5 ? Math.floor(random() * HOT_KEYS) : roundRobin++ % KEYS}`
  let published = 0
  let rolledBack = 0
  const producer = async (p: number) => {
    for (let t = 0; t < TRANSACTIONS_PER_PRODUCER; t++) {
      const client = await producersPool.connect()
      try {
        await client.query('BEGIN')
        const roll = random()
        const mode = roll < 0.2 ? 'batch' : roll < 0.3 ? 'same key twice' : 'single'
        const keys: string[] =
          mode === 'batch'
            ? [pickKey(), pickKey(), pickKey()]
            : mode === 'same key twice'
              ? Array(2).fill(pickKey())
              : [pickKey()]
        const messages = keys.map((key, i) => ({
          topic: TOPIC,
          key,
          payload: { p, t, i },
          ...(random() < 0.1 ? { delayMs: Math.floor(random() * 150) } : {}),
        }))
        // One statement for a batch; a same-key pair as two statements of one transaction.
        const results =
          mode === 'same key twice'
            ? [await publish(outbox, client, messages[0]!), await publish(outbox, client, messages[1]!)]
            : await publishMany(outbox, client, messages)
        for (let i = 0; i < keys.length; i++) {
          const { rows } = await client.query(
            `UPDATE ${ledger}_counter SET n = n + 1 WHERE key = $1 RETURNING n`,
            [keys[i]],
          )
          await client.query(`INSERT INTO ${ledger} (key, n, msg_id) VALUES ($1, $2, $3)`, [
            keys[i],
            rows[0].n,
            results[i]!.id,
          ])
        }
        if (random() < 0.05) {
          await client.query('ROLLBACK')
          rolledBack += keys.length
        } else {
          await client.query('COMMIT')
          published += keys.length
        }
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {})
        throw err
      } finally {
        client.release()
      }
    }
  }

  // --- chaos: kill a random relay (no grace: its handlers are aborted mid-flight) and replace it
  let kills = 0
  let chaos = true
  const chaosLoop = (async () => {
    while (chaos) {
      await new Promise((r) => setTimeout(r, 300 + Math.floor(random() * 400)))
      if (!chaos) break
      const victim = Math.floor(random() * relays.length)
      await relays[victim]!.stop({ graceMs: 0 })
      kills++
      relays[victim] = await newRelay()
    }
  })()

  await Promise.all(Array.from({ length: PRODUCERS }, (_, p) => producer(p)))
  const t = tableSql(outbox)
  try {
    await waitFor(
      async () => {
        const rows = await h.query<{ left: number }>(`SELECT count(*)::int AS left FROM ${t}`)
        return rows[0]?.left === 0
      },
      { timeoutMs: 45_000, intervalMs: 100, what: `every message delivered (seed ${seed})` },
    )
  } finally {
    chaos = false
    await chaosLoop
  }
  await Promise.all(relays.map((r) => r.stop({ graceMs: 1_000 })))

  // --- the checks
  const truth = await h.query<{ key: string; n: number; msg_id: string }>(
    `SELECT key, n, msg_id::text AS msg_id FROM ${ledger} ORDER BY key, n`,
  )
  expect(truth.length, `seed ${seed}`).toBe(published)
  const position = new Map(truth.map((r) => [r.msg_id, r.n]))
  const expectedByKey = new Map<string, string[]>()
  for (const r of truth) {
    append(expectedByKey, r.key, r.msg_id)
  }
  const startsByKey = new Map<string, Start[]>()
  for (const s of starts) {
    expect(position.has(s.id), `delivered ${s.id}, which is not in the ledger (rolled back?)`).toBe(true)
    append(startsByKey, s.key, s)
  }
  const disorders: string[] = []
  for (const [key, expected] of expectedByKey) {
    const list = startsByKey.get(key) ?? []
    // Starts in commit order: a message may start again (retry, redelivery after a kill), but
    // once a later message of the key started, no earlier one ever starts again.
    let last = 0
    for (const s of list) {
      const n = position.get(s.id)!
      if (n < last) disorders.push(`${key}: #${n} started after #${last}`)
      last = Math.max(last, n)
    }
    // The messages that succeeded, each in commit order, none missing.
    const succeeded = [...new Set(list.filter((s) => s.outcome === 'ok').map((s) => s.id))]
    if (succeeded.join() !== expected.join()) disorders.push(`${key}: succeeded out of order or missing`)
  }
  expect(disorders, `seed ${seed}`).toEqual([])
  expect(overlaps, `seed ${seed}`).toEqual([])
  expect(startsByKey.size).toBe(expectedByKey.size)
  expect(expectedByKey.size).toBeGreaterThan(KEYS * 0.95) // a key whose every message rolled back has none
  // The run really exercised the hard parts.
  expect(kills).toBeGreaterThanOrEqual(2)
  expect(aborts).toBeGreaterThan(0)
  expect(failures).toBeGreaterThan(50)
  expect(rolledBack).toBeGreaterThan(0)
  console.info(
    `ledger proof (seed ${seed}): ${published} messages on ${expectedByKey.size} keys, ${rolledBack} rolled back, ` +
      `${starts.length} handler calls, ${failures} failures, ${kills} relay kills, ${aborts} handlers aborted`,
  )
}, 90_000)
