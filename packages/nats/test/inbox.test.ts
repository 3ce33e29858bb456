// A consumer of what jetStreamForwarder sent, made idempotent with the inbox: the same JetStream
// message read twice (a redelivery) is processed once, by its Nats-Msg-Id, on the real servers.
import {
  deliveredMessage,
  expectOutboxError,
  testDatabaseUrl,
  thrown,
  uniqueTableName,
} from '@outboxkit/conformance'
import { defineInbox, migrate } from '@outboxkit/core'
import { jetStreamForwarder, jetStreamInboxMessage } from '@outboxkit/nats'
import { inboxHandler, pgBackend } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, expect, test } from 'vitest'
import { useTestStream } from './support/test-stream.js'

const testStream = useTestStream('inbox', 16 * 1024)
const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 2 })
const table = uniqueTableName('nats_inbox')
afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS ${table}, ${table}_effects`)
  await pool.end()
})

test('a JetStream message read twice is processed once, by its Nats-Msg-Id', async () => {
  const inbox = defineInbox({ table, consumer: 'invoices' })
  await migrate(inbox, pgBackend({ pool }))
  await pool.query(`CREATE TABLE ${table}_effects (message_id text NOT NULL, order_id text)`)
  const message = deliveredMessage({ payload: { orderId: 'o-1' } })
  await jetStreamForwarder(testStream().js, { subject: `${testStream().prefix}.orders` })(message, {
    signal: new AbortController().signal,
  })
  const handle = inboxHandler(inbox, pool, (m: ReturnType<typeof jetStreamInboxMessage>, client) =>
    client.query(`INSERT INTO ${table}_effects VALUES ($1, $2)`, [
      m.id,
      (m.payload as { orderId: string }).orderId,
    ]),
  )
  const results = []
  for (let read = 0; read < 2; read++) {
    // Each ordered consumer reads the stream from its start: the second read is a redelivery.
    const consumer = await testStream().js.consumers.get(testStream().name)
    const m = await consumer.next({ expires: 5_000 })
    expect(m, 'the forwarded message').not.toBeNull()
    const inboxMessage = jetStreamInboxMessage(m!)
    expect(inboxMessage).toMatchObject({
      id: message.id,
      topic: message.topic,
      key: message.key,
      payload: message.payload,
    })
    results.push((await handle(inboxMessage)).processed)
  }
  expect(results).toEqual([true, false])
  const { rows } = await pool.query(`SELECT message_id, order_id FROM ${table}_effects`)
  expect(rows).toEqual([{ message_id: message.id, order_id: 'o-1' }])
})

test('a NATS message without Nats-Msg-Id, or whose data is not JSON, is refused with INVALID_MESSAGE', () => {
  const data = new TextEncoder().encode('{}')
  expectOutboxError(
    thrown(() => jetStreamInboxMessage({ data })),
    'INVALID_MESSAGE',
    { message: [/Nats-Msg-Id/] },
  )
  const headers = { get: (n: string) => (n === 'Nats-Msg-Id' ? 'm1' : '') }
  expectOutboxError(
    thrown(() => jetStreamInboxMessage({ headers, data: new TextEncoder().encode('no') })),
    'INVALID_MESSAGE',
  )
  expect(jetStreamInboxMessage({ headers, data })).toMatchObject({
    id: 'm1',
    topic: null,
    key: null,
    payload: {},
  })
})
