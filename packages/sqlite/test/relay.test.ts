import { uniqueTableName, waitFor } from '@outboxkit/conformance'
import {
  Cancel,
  createRelay,
  type DeliveredMessage,
  defineOutbox,
  migrate,
  type Relay,
  Retry,
} from '@outboxkit/core'
import { publish, publishMany, sqliteBackend } from '@outboxkit/sqlite'
import type Database from 'better-sqlite3'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { nextEvent, type TempDatabase, tableRows, tempDatabase } from './support.js'

let temp: TempDatabase
let db: Database.Database
const relays: Relay[] = []

beforeAll(() => {
  temp = tempDatabase('relay')
  db = temp.open()
})
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.stop({ graceMs: 1_000 })))
})
afterAll(() => temp.cleanup())

const count = (table: string) => Number(db.prepare(`SELECT count(*) FROM "${table}"`).pluck().get())

describe('a relay end to end', () => {
  test('delivers with retries and a dead letter, and settles every outcome', async () => {
    const table = uniqueTableName('sqlite_e2e')
    const outbox = defineOutbox({ table })
    const backend = sqliteBackend({ filename: temp.file })
    await migrate(outbox, backend)
    const calls = new Map<string, number>()
    const deliveries: DeliveredMessage[] = []
    const relay = createRelay(outbox, {
      backend,
      pollIntervalMs: 50,
      maxAttempts: 3,
      retry: { baseMs: 10, maxMs: 20 },
      handlers: {
        ok: async (m) => void deliveries.push(m),
        flaky: async (m) => {
          const n = (calls.get(m.id) ?? 0) + 1
          calls.set(m.id, n)
          if (n < 3) throw new Retry({ delayMs: 10 })
          deliveries.push(m)
        },
        doomed: async () => {
          throw new Error('always fails')
        },
        cancelled: async () => {
          throw new Cancel('not wanted')
        },
      },
    })
    relays.push(relay)
    const dead: string[] = []
    relay.on('deadLettered', (e) => dead.push(`${e.topic}:${e.reason}:${e.attempts}`))
    let sent: Promise<unknown> | undefined
    db.transaction(() => {
      sent = publishMany(outbox, db, [
        { topic: 'ok', payload: { n: 1 }, key: 'agg-1', headers: { a: 'b' } },
        { topic: 'flaky', payload: 'f' },
        { topic: 'doomed', payload: 'd' },
        { topic: 'cancelled', payload: 'c' },
      ])
    })()
    await sent
    await relay.start()
    await waitFor(() => dead.length === 2 && deliveries.length === 2, { what: 'every outcome' })
    await waitFor(() => count(table) === 2, { what: 'delivered rows to be deleted' })
    expect(dead.sort()).toEqual(['cancelled:cancel:1', 'doomed:max-attempts:3'])
    const ok = deliveries.find((d) => d.topic === 'ok')!
    expect(ok).toMatchObject({ payload: { n: 1 }, key: 'agg-1', headers: { a: 'b' }, attempts: 1 })
    expect(deliveries.find((d) => d.topic === 'flaky')!.attempts).toBe(3)
    const rows = tableRows(db, table)
    expect(rows.map((r) => [r.topic, r.state, r.attempts, r.last_error]).sort()).toEqual([
      ['cancelled', 'dead', 1, 'not wanted'],
      ['doomed', 'dead', 3, 'always fails'],
    ])
    await relay.stop()
    expect(db.open).toBe(true)
  })

  test('ordered topics: messages of a key are delivered one at a time, in publish order', async () => {
    const table = uniqueTableName('sqlite_ordered')
    const outbox = defineOutbox({ table, orderedTopics: ['ledger'] })
    const backend = sqliteBackend(db)
    await migrate(outbox, backend)
    const seen = new Map<string, number[]>()
    let running = 0
    let overlap = false
    const runningKeys = new Set<string>()
    const relay = createRelay(outbox, {
      backend,
      concurrency: 20,
      pollIntervalMs: 50,
      retry: { baseMs: 5, maxMs: 10 },
      handlers: {
        ledger: async (m) => {
          if (runningKeys.has(m.key!)) overlap = true
          runningKeys.add(m.key!)
          running++
          await new Promise((r) => setTimeout(r, 1))
          // A failure keeps the head in place: the key waits for it.
          if ((m.payload as number) % 7 === 3 && m.attempts === 1) {
            runningKeys.delete(m.key!)
            running--
            throw new Error('first try fails')
          }
          seen.set(m.key!, [...(seen.get(m.key!) ?? []), m.payload as number])
          runningKeys.delete(m.key!)
          running--
        },
      },
    })
    relays.push(relay)
    for (let tx = 0; tx < 10; tx++) {
      db.transaction(() => {
        for (let k = 0; k < 5; k++) {
          void publish(outbox, db, { topic: 'ledger', key: `k${k}`, payload: tx * 2 })
          void publish(outbox, db, { topic: 'ledger', key: `k${k}`, payload: tx * 2 + 1 })
        }
      })()
    }
    await relay.start()
    await waitFor(() => [...seen.values()].reduce((n, v) => n + v.length, 0) === 100, {
      what: 'every ordered message',
    })
    expect(overlap).toBe(false)
    expect(running).toBe(0)
    for (let k = 0; k < 5; k++) expect(seen.get(`k${k}`)).toEqual(Array.from({ length: 20 }, (_, i) => i))
  })
})

describe('the in-process wake', () => {
  for (const shared of [true, false]) {
    test(`a relay polling every minute delivers right after the commit (${shared ? "the producers' Database" : 'its own connection'}); a rolled-back publish is never delivered`, async () => {
      const table = uniqueTableName('sqlite_wake')
      const outbox = defineOutbox({ table })
      const backend = shared ? sqliteBackend(db) : sqliteBackend({ filename: temp.file })
      await migrate(outbox, backend)
      const delivered: DeliveredMessage[] = []
      let claims = 0
      const relay = createRelay(outbox, {
        backend,
        pollIntervalMs: 60_000,
        handlers: { t: async (m) => void delivered.push(m) },
      })
      relays.push(relay)
      relay.on('claimed', () => claims++)
      await relay.start()
      await waitFor(() => claims >= 1, { what: 'the first (empty) claim' })

      // 1. A committed publish: delivered long before the next poll (60 s away).
      const first = nextEvent(relay, 'delivered', { timeoutMs: 5_000 })
      let committed: Promise<{ id: string }> | undefined
      db.transaction(() => {
        committed = publish(outbox, db, { topic: 't', payload: 'committed' })
      })()
      const event = await first
      expect(event.message.id).toBe((await committed!).id)

      // 2. A publish kept open across an await: no delivery before the COMMIT, one right after.
      db.exec('BEGIN')
      const { id: late } = await publish(outbox, db, { topic: 't', payload: 'late' })
      const claimsBefore = claims
      await new Promise((r) => setTimeout(r, 100))
      expect(delivered.map((d) => d.id)).not.toContain(late)
      const second = nextEvent(relay, 'delivered', { where: (e) => e.message.id === late, timeoutMs: 5_000 })
      db.exec('COMMIT')
      await second
      expect(claims).toBeGreaterThan(claimsBefore)

      // 3. A rolled-back publish: it may wake the relay (spuriously), never delivers.
      let rolledBack: Promise<{ id: string }> | undefined
      expect(() =>
        db.transaction(() => {
          rolledBack = publish(outbox, db, { topic: 't', payload: 'rolled back' })
          throw new Error('roll back')
        })(),
      ).toThrow('roll back')
      const { id: ghost } = await rolledBack!
      // A committed message published after it is delivered, so the relay has claimed since.
      const third = nextEvent(relay, 'delivered', {
        where: (e) => e.message.payload === 'after',
        timeoutMs: 5_000,
      })
      db.transaction(() => {
        void publish(outbox, db, { topic: 't', payload: 'after' })
      })()
      await third
      expect(delivered.map((d) => d.id)).not.toContain(ghost)
      expect(delivered.map((d) => d.payload)).toEqual(['committed', 'late', 'after'])
      await waitFor(() => count(table) === 0, { what: 'the delivered rows to be deleted' })
    })
  }
})
