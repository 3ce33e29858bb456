// Scenario 6: a long transaction publishes first and commits after later ones; its message is
// still delivered (the claim scans by state and available_at, not by a moving id cursor).
import { waitFor } from '@outboxkit/conformance'
import { publish } from '@outboxkit/pg'
import type pg from 'pg'
import { afterAll, afterEach, expect, test } from 'vitest'
import { figuresLine } from '../src/report.js'
import { World } from './support/world.js'

const w = new World()
afterEach(() => w.cleanup())
afterAll(() => w.close())

test('a transaction that publishes first and commits last is still delivered', async () => {
  const outbox = await w.outbox('late_commit')
  const delivered: string[] = []
  const relay = w.relay(outbox, {
    handlers: { t: (m) => void delivered.push(m.id) },
    pollIntervalMs: 200,
    keepDelivered: true,
  })
  await relay.start()
  // Several long transactions open and publish first...
  const long: { client: pg.PoolClient; id: string }[] = []
  for (let i = 0; i < 5; i++) {
    const client = await w.pool.connect()
    await client.query('BEGIN')
    const { id } = await publish(outbox, client, { topic: 't', payload: { long: i } })
    long.push({ client, id })
  }
  try {
    // ...then many short ones commit and are delivered while the long ones are still open.
    const short = await w.publish(
      outbox,
      Array.from({ length: 50 }, (_, i) => ({ topic: 't', payload: { short: i } })),
    )
    await waitFor(() => short.every((s) => delivered.includes(s.id)), {
      timeoutMs: 20_000,
      what: 'the later, shorter transactions',
    })
    expect(long.every((l) => !delivered.includes(l.id))).toBe(true)
    // The long transactions' ids (UUIDv7) and available_at (transaction start) are older than
    // everything delivered so far; they commit now, in reverse order.
    expect(long.every((l) => short.every((s) => l.id < s.id))).toBe(true)
    for (const l of [...long].reverse()) await l.client.query('COMMIT')
    await waitFor(() => long.every((l) => delivered.includes(l.id)), {
      timeoutMs: 20_000,
      what: 'the long transactions',
    })
  } finally {
    for (const l of long) {
      await l.client.query('ROLLBACK').catch(() => {})
      l.client.release()
    }
  }
  // Handlers return before their batched settle marks the rows: wait for the settles first.
  await waitFor(async () => (await w.rows(outbox)).every((r) => r.state === 'delivered'), {
    what: 'the settles of the delivered rows',
  })
  const rows = await w.rows(outbox)
  expect(rows).toHaveLength(55)
  expect(rows.map((r) => r.attempts)).toEqual(rows.map(() => 1))
  expect(new Set(delivered).size).toBe(55)
  console.log(
    figuresLine('out-of-order-commit', {
      longTransactions: 5,
      later: 50,
      delivered: delivered.length,
      lost: 0,
    }),
  )
})

test('a long transaction rolled back after later commits leaves nothing behind', async () => {
  const outbox = await w.outbox('late_rollback')
  const delivered: string[] = []
  const relay = w.relay(outbox, { handlers: { t: (m) => void delivered.push(m.id) }, pollIntervalMs: 200 })
  await relay.start()
  const client = await w.pool.connect()
  let rolledBack: string
  try {
    await client.query('BEGIN')
    rolledBack = (await publish(outbox, client, { topic: 't', payload: 'never' })).id
    const [later] = await w.publish(outbox, [{ topic: 't', payload: 'later' }])
    await waitFor(() => delivered.includes(later!.id), { what: 'the later message' })
    await client.query('ROLLBACK')
  } finally {
    client.release()
  }
  const [marker] = await w.publish(outbox, [{ topic: 't', payload: 'marker' }])
  await waitFor(() => delivered.includes(marker!.id), { what: 'a marker published after the rollback' })
  expect(delivered).not.toContain(rolledBack)
  // Handlers return before their batched settle deletes the rows: wait for the settles, then
  // nothing may be left (in particular no row of the rolled-back transaction).
  await waitFor(async () => (await w.rows(outbox)).length === 0, {
    what: 'the settles of the delivered rows',
  })
  expect(await w.rows(outbox)).toEqual([])
})
