// A relay on PostgreSQL forwarding into RabbitMQ: every committed message ends in the queue (at
// least once) while the path is cut and frozen in the middle of the run, and a message the broker
// refuses dead-letters with the broker's reason without holding back the others.

import {
  nextEvent,
  type PausableProxy,
  startPausableProxy,
  testDatabaseUrl,
  uniqueTableName,
  waitFor,
} from '@outboxkit/conformance'
import { createRelay, defineOutbox, isOutboxError, listDead, migrate, type Outbox } from '@outboxkit/core'
import { pgBackend, publish } from '@outboxkit/pg'
import { rabbitmqForwarder } from '@outboxkit/rabbitmq'
import pg from 'pg'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { RABBITMQ_URL, TestBroker } from './rabbitmq-broker.js'

let broker: TestBroker
let proxy: PausableProxy
let pool: pg.Pool
const tables: string[] = []
beforeAll(async () => {
  broker = await new TestBroker().start()
  const target = new URL(RABBITMQ_URL)
  proxy = await startPausableProxy({ host: target.hostname, port: Number(target.port || 5672) })
  pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 })
})
afterAll(async () => {
  proxy.heal()
  proxy.resume()
  await proxy.close()
  await broker.close()
  for (const table of tables) await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {})
  await pool.end()
})

async function freshOutbox(prefix: string): Promise<Outbox<undefined>> {
  const table = uniqueTableName(`rabbitmq_${prefix}`)
  tables.push(table)
  const outbox = defineOutbox({ table })
  await migrate(outbox, pgBackend({ pool }))
  return outbox
}

/** Commits one message per payload, each in its own transaction; returns their ids. */
async function commitMessages(outbox: Outbox<undefined>, payloads: unknown[]): Promise<string[]> {
  const ids: string[] = []
  for (const [i, payload] of payloads.entries()) {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      ids.push((await publish(outbox, client, { topic: 'order.created', key: `k${i % 4}`, payload })).id)
      await client.query('COMMIT')
    } finally {
      client.release()
    }
  }
  return ids
}

/** Ids taken off `queue` so far, kept across calls. */
function queueReader(queue: string) {
  const seen: string[] = []
  return async () => {
    for (const m of await broker.drain(queue)) seen.push(String(m.properties.messageId))
    return seen
  }
}

test('every committed message reaches the queue while the path is cut and then frozen mid-run', async () => {
  const queue = await broker.queue('relay.faults')
  const outbox = await freshOutbox('faults')
  const factoryCalls: number[] = []
  const forward = rabbitmqForwarder(
    async () => {
      factoryCalls.push(Date.now())
      return (await broker.connect(proxy.urlFor(RABBITMQ_URL))).createConfirmChannel()
    },
    { exchange: broker.exchange, routingKey: 'relay.faults', timeoutMs: 300 },
  )
  const relay = createRelay(outbox, {
    backend: pgBackend({ pool }),
    handlers: { 'order.created': forward },
    retry: { baseMs: 20, maxMs: 200 },
    maxAttempts: 1_000,
    pollIntervalMs: 50,
  })
  const read = queueReader(queue)
  const batch = (from: number) =>
    commitMessages(
      outbox,
      Array.from({ length: 20 }, (_, i) => ({ i: from + i })),
    )
  const committed = await batch(0)
  await relay.start()
  try {
    await waitFor(async () => (await read()).length >= 5, { what: 'the first messages in the queue' })
    // Each fault holds while the next batch commits, until the relay failed on it with its code.
    for (const [from, code, fault, lift] of [
      [20, 'BROKER', () => proxy.cut({ refuse: true }), () => proxy.heal()],
      [40, 'TIMEOUT', () => proxy.pause(), () => proxy.resume()],
    ] as const) {
      fault()
      const commits = batch(from)
      await nextEvent(relay, 'retried', { where: (e) => isOutboxError(e.error, code) })
      lift()
      committed.push(...(await commits))
      await waitFor(async () => (await read()).length >= from + 5, {
        what: `messages after the ${code} fault`,
      })
    }
    const ids = await waitFor(
      async () => {
        const seen = await read()
        return committed.every((id) => seen.includes(id)) ? seen : undefined
      },
      { timeoutMs: 30_000, what: `all ${committed.length} committed messages in the queue` },
    )
    expect(new Set(ids)).toEqual(new Set(committed))
    expect(factoryCalls.length).toBeGreaterThanOrEqual(2)
  } finally {
    await relay.stop()
  }
})

test('a payload the queue refuses dead-letters with the broker reason; the others are delivered', async () => {
  const queue = await broker.queue('relay.small', {
    'x-max-length-bytes': 4_096,
    'x-overflow': 'reject-publish',
  })
  const outbox = await freshOutbox('refused')
  const channel = await (await broker.connect()).createConfirmChannel()
  const relay = createRelay(outbox, {
    backend: pgBackend({ pool }),
    handlers: {
      'order.created': rabbitmqForwarder(channel, { exchange: broker.exchange, routingKey: 'relay.small' }),
    },
    retry: { baseMs: 20, maxMs: 100 },
    maxAttempts: 2,
    pollIntervalMs: 50,
  })
  const read = queueReader(queue)
  const [big, ...small] = await commitMessages(outbox, [
    { text: 'x'.repeat(8_000) },
    ...Array.from({ length: 6 }, (_, i) => ({ i })),
  ])
  const dead = nextEvent(relay, 'deadLettered', { where: (e) => e.id === big, timeoutMs: 20_000 })
  await relay.start()
  try {
    expect((await dead).error).toContain('basic.nack')
    const ids = await waitFor(async () => {
      const seen = await read()
      return small.every((id) => seen.includes(id)) ? seen : undefined
    })
    expect(ids).not.toContain(big)
    const [letter, ...others] = await listDead(outbox, pgBackend({ pool }))
    expect(others).toEqual([])
    expect(letter).toMatchObject({ id: big, attempts: 2 })
    expect(letter!.lastError).toMatch(/\[outboxkit\] \[rabbitmq\] RabbitMQ refused message .*basic\.nack/)
  } finally {
    await relay.stop()
  }
})
