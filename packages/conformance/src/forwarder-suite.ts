// The one conformance suite every broker forwarder runs (@outboxkit/nats, /rabbitmq, /redis).
// It asserts through what the broker holds, read back with the broker's own client by the
// package's harness, never through the forwarder under test.
import {
  createRelay,
  type DeliveredMessage,
  defineOutbox,
  type Handler,
  isOutboxError,
  migrate,
} from '@outboxkit/core'
import { pgBackend, publish } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { testDatabaseUrl, uniqueTableName, waitFor } from './database.js'

/** One message as the broker holds it, read back with the broker's own client. */
export interface ReceivedRecord {
  /** The broker's message id (JetStream `Nats-Msg-Id`, AMQP `messageId`, the Redis field `id`). */
  id: string
  topic: string
  /** `null` when the broker holds no key for it. */
  key: string | null
  /** The broker headers besides the ones that carry id, topic and key. */
  headers: Record<string, string>
  /** The body, parsed from JSON. */
  payload: unknown
  /** The content type the broker holds, when it has such a field. */
  contentType?: string
}

/** What a forwarder package gives the suite, for one test file on the package's real broker. */
export interface ForwarderHarness {
  /** A relay handler forwarding into the file's own stream, queue or key, with short timeouts. */
  forwarder(): Handler
  /** A handler whose target nothing on the broker takes: it must reject, never resolve. */
  unroutable(): Handler
  /** Every message the broker holds for the file's target, in the broker's order. */
  received(): Promise<ReceivedRecord[]>
  /** Empties the file's target between tests. */
  reset(): Promise<void>
  /**
   * Whether the broker drops a second forward of the same message id (JetStream, inside the
   * stream's duplicate window). Otherwise both are kept, with the same id, for the consumer.
   */
  dedupsById: boolean
  teardown(): Promise<void>
}

/** The suite's options. */
export interface ForwarderConformance {
  /** The package, e.g. `'nats'`: error messages must name it (`[outboxkit] [nats]`). */
  name: string
  setup(): Promise<ForwarderHarness>
}

let sequence = 0
/** A delivered message as the relay would hand it to the handler. */
export function deliveredMessage(overrides: Partial<DeliveredMessage> = {}): DeliveredMessage {
  sequence++
  return {
    id: `0190f0c0-0000-7000-8000-${String(sequence).padStart(12, '0')}`,
    topic: 'order.created',
    key: 'order-1',
    payload: { n: sequence, text: 'grüße ✓' },
    headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    attempts: 1,
    createdAt: new Date(),
    ...overrides,
  }
}

const context = () => ({ signal: new AbortController().signal })

/** Registers the forwarder conformance tests for one package. */
export function runForwarderConformance(spec: ForwarderConformance): void {
  describe(`forwarder conformance: ${spec.name}`, () => {
    let h: ForwarderHarness
    beforeAll(async () => {
      h = await spec.setup()
    })
    afterAll(() => h?.teardown())
    const fresh = async () => {
      await h.reset()
      return h
    }
    registerEnvelopeTests(fresh)
    registerFailureTests(spec.name, fresh)
    registerRelayTests(fresh)
  })
}

function registerEnvelopeTests(fresh: () => Promise<ForwarderHarness>): void {
  test('resolves once the broker holds the message: id, topic, key, headers and the JSON payload', async () => {
    const h = await fresh()
    const message = deliveredMessage()
    await h.forwarder()(message, context())
    const [record, ...rest] = await h.received()
    expect(rest).toEqual([])
    expect(record).toMatchObject({
      id: message.id,
      topic: message.topic,
      key: message.key,
      payload: message.payload,
    })
    expect(record!.headers.traceparent).toBe(message.headers.traceparent)
    if (record!.contentType !== undefined) expect(record!.contentType).toBe('application/json')
  })

  test('a message without a key reaches the broker without one', async () => {
    const h = await fresh()
    await h.forwarder()(deliveredMessage({ key: null, headers: {} }), context())
    const [record] = await h.received()
    expect(record!.key).toBeNull()
  })

  test('forwarding the same message twice: the broker dedups by id, or keeps both with the same id', async () => {
    const h = await fresh()
    const message = deliveredMessage()
    const forward = h.forwarder()
    await forward(message, context())
    await forward({ ...message, attempts: 2 }, context())
    const ids = (await h.received()).map((r) => r.id)
    expect(ids).toEqual(h.dedupsById ? [message.id] : [message.id, message.id])
  })
}

function registerFailureTests(name: string, fresh: () => Promise<ForwarderHarness>): void {
  test('an unroutable message rejects with an OutboxError naming the package, and nothing is kept', async () => {
    const h = await fresh()
    const error = await Promise.resolve(h.unroutable()(deliveredMessage(), context())).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(isOutboxError(error), String(error)).toBe(true)
    expect((error as Error).message).toContain(`[outboxkit] [${name}]`)
    expect(await h.received()).toEqual([])
  })
}

function registerRelayTests(fresh: () => Promise<ForwarderHarness>): void {
  test('a relay on PostgreSQL forwards every committed message and no rolled-back one, each key in commit order', async () => {
    const h = await fresh()
    const table = uniqueTableName('forward')
    const outbox = defineOutbox({ table, orderedTopics: ['order.created'] })
    const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 })
    const backend = pgBackend({ pool })
    await migrate(outbox, backend)
    const committed: { id: string; key: string }[] = []
    try {
      for (let i = 0; i < 60; i++) {
        const key = `k${i % 3}`
        const client = await pool.connect()
        try {
          await client.query('BEGIN')
          const { id } = await publish(outbox, client, { topic: 'order.created', key, payload: { i } })
          if (i % 7 === 3) await client.query('ROLLBACK')
          else {
            await client.query('COMMIT')
            committed.push({ id, key })
          }
        } finally {
          client.release()
        }
      }
      const relay = createRelay(outbox, { backend, handlers: { 'order.created': h.forwarder() } })
      await relay.start()
      try {
        const received = await waitFor(
          async () => {
            const r = await h.received()
            return new Set(r.map((x) => x.id)).size >= committed.length ? r : undefined
          },
          { timeoutMs: 30_000, what: `${committed.length} messages in the broker` },
        )
        expect(new Set(received.map((r) => r.id))).toEqual(new Set(committed.map((c) => c.id)))
        for (const key of ['k0', 'k1', 'k2']) {
          const inBroker = [...new Set(received.filter((r) => r.key === key).map((r) => r.id))]
          expect(inBroker, `order of ${key}`).toEqual(committed.filter((c) => c.key === key).map((c) => c.id))
        }
      } finally {
        await relay.stop()
      }
    } finally {
      await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {})
      await pool.end()
    }
  })
}
