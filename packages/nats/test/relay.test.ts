// A relay on PostgreSQL forwarding into the real JetStream: a payload the stream refuses
// dead-letters with JetStream's reason and does not hold the others back; with orderedTopics
// each key reaches the stream in commit order across a relay that dies between a publish and
// its settle (the ledger: every committed id, read back from the stream, in first-seen order).

import { createPgOutbox, nextEvent, waitFor } from '@outboxkit/conformance'
import { createRelay, type Handler, type Relay } from '@outboxkit/core'
import { jetStreamForwarder } from '@outboxkit/nats'
import { pgBackend } from '@outboxkit/pg'
import { expect, test } from 'vitest'
import { useTestStream } from './support/test-stream.js'

const MAX_MSG_SIZE = 8 * 1024
const testStream = useTestStream('relay', MAX_MSG_SIZE)

const forwarder = () =>
  jetStreamForwarder(testStream().js, { subject: `${testStream().prefix}.orders`, timeoutMs: 2_000 })
const storedIds = async () => (await testStream().records()).map((r) => r.id)
const waitStored = (n: number) =>
  waitFor(async () => ((await testStream().records()).length >= n ? true : undefined), {
    timeoutMs: 30_000,
    what: `${n} messages in the stream`,
  })

test('a payload above max_msg_size dead-letters with the JetStream reason; the others are stored', async () => {
  const db = await createPgOutbox('nats_too_large')
  let relay: Relay | undefined
  try {
    const committed = await db.commit('order.created', [
      { key: null, payload: { n: 1 } },
      { key: null, payload: { blob: 'x'.repeat(MAX_MSG_SIZE * 2) } },
      { key: null, payload: { n: 3 } },
    ])
    relay = createRelay(db.outbox, {
      backend: db.backend,
      handlers: { 'order.created': forwarder() },
      maxAttempts: 2,
      retry: { baseMs: 10, maxMs: 50 },
      pollIntervalMs: 50,
    })
    const dead = nextEvent(relay, 'deadLettered', { timeoutMs: 20_000 })
    await relay.start()
    const letter = await dead
    expect(letter.id).toBe(committed[1]!.id)
    expect(letter.reason).toBe('max-attempts')
    expect(letter.error).toContain('[outboxkit] [nats]')
    expect(letter.error).toMatch(/message size exceeds maximum/i)
    await waitStored(2)
    expect(new Set(await storedIds())).toEqual(new Set([committed[0]!.id, committed[2]!.id]))
  } finally {
    await relay?.stop()
    await db.drop()
  }
})

/** The forwarder, except that after `publishes` messages it publishes one more and never returns. */
function dyingAfter(publishes: number, forward: Handler): { handler: Handler; died: Promise<string> } {
  let count = 0
  let died!: (id: string) => void
  const diedAt = new Promise<string>((resolve) => {
    died = resolve
  })
  const handler: Handler = async (message, context) => {
    if (count >= publishes + 1) return new Promise(() => {})
    count++
    await forward(message, context)
    if (count === publishes + 1) {
      died(message.id)
      return new Promise(() => {})
    }
  }
  return { handler, died: diedAt }
}

test('orderedTopics: each key in commit order across a relay that died between a publish and its settle', async () => {
  const db = await createPgOutbox('nats_order', ['order.created'])
  let first: Relay | undefined
  let second: Relay | undefined
  try {
    const items = Array.from({ length: 90 }, (_, i) => ({ key: `k${i % 3}`, payload: { i } }))
    const committed = await db.commit('order.created', items)
    const dying = dyingAfter(30, forwarder())
    first = createRelay(db.outbox, {
      backend: db.backend,
      handlers: { 'order.created': dying.handler },
      leaseMs: 1_000,
      pollIntervalMs: 50,
    })
    await first.start()
    const lastPublished = await dying.died
    await first.stop({ graceMs: 0 })
    expect(await storedIds()).toContain(lastPublished)
    second = createRelay(db.outbox, {
      backend: pgBackend({ pool: db.pool }),
      handlers: { 'order.created': forwarder() },
      pollIntervalMs: 50,
    })
    await second.start()
    await waitStored(committed.length)
    const records = await testStream().records()
    expect(records.length, 'the republished message is a duplicate ack, stored once').toBe(committed.length)
    for (const key of ['k0', 'k1', 'k2']) {
      const inStream = records.filter((r) => r.key === key).map((r) => r.id)
      expect(inStream, `order of ${key}`).toEqual(committed.filter((c) => c.key === key).map((c) => c.id))
    }
  } finally {
    await first?.stop({ graceMs: 0 })
    await second?.stop()
    await db.drop()
  }
})
