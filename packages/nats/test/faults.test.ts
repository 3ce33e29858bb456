// Faults on the path between the forwarder's NATS client and the real server, through a TCP
// proxy this file owns: a frozen path gives TIMEOUT within timeoutMs, a cut path rejects, and
// both heal without a new client. A relay forwarding committed messages from PostgreSQL through
// cuts and freezes loses none, and JetStream stores each once (Nats-Msg-Id, duplicate window).
import { type JetStreamClient, jetstream } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import {
  createPgOutbox,
  deferred,
  deliveredMessage,
  expectOutboxError,
  nextEvent,
  type PausableProxy,
  rejection,
  startPausableProxy,
  waitFor,
} from '@outboxkit/conformance'
import { createRelay, type Relay } from '@outboxkit/core'
import { jetStreamForwarder } from '@outboxkit/nats'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import {
  connectNats,
  createTestStream,
  NATS_HOST,
  NATS_PORT,
  type TestStream,
} from './support/test-stream.js'

const TIMEOUT_MS = 600
let stream: TestStream
let proxy: PausableProxy
let nc: NatsConnection
let js: JetStreamClient
beforeAll(async () => {
  stream = await createTestStream('faults')
  proxy = await startPausableProxy({ host: NATS_HOST, port: NATS_PORT })
  nc = await connectNats(proxy.port)
  js = jetstream(nc)
})
afterAll(async () => {
  proxy?.resume()
  proxy?.heal()
  await nc?.close()
  await proxy?.close()
  await stream?.delete()
})
beforeEach(() => stream.purge())
afterEach(() => {
  proxy.resume()
  proxy.heal()
})

const context = () => ({ signal: new AbortController().signal })
const forwarder = () => jetStreamForwarder(js, { subject: `${stream.prefix}.orders`, timeoutMs: TIMEOUT_MS })

/** Forwards `message` until it resolves (the client reconnecting), bounded. */
const forwardOnceHealed = (message: ReturnType<typeof deliveredMessage>) =>
  waitFor(
    () =>
      Promise.resolve(forwarder()(message, context())).then(
        () => true,
        () => undefined,
      ),
    { timeoutMs: 15_000, what: 'a forward once the path healed' },
  )

describe('one forward', () => {
  test('a frozen path: TIMEOUT within timeoutMs; after resume the same message succeeds and is stored once', async () => {
    const message = deliveredMessage()
    proxy.pause()
    const started = Date.now()
    const error = await rejection(Promise.resolve(forwarder()(message, context())))
    const elapsed = Date.now() - started
    expectOutboxError(error, 'TIMEOUT', { source: 'nats', message: [message.id] })
    expect(elapsed, 'rejected within the bound').toBeLessThan(TIMEOUT_MS * 5)
    proxy.resume()
    await forwardOnceHealed(message)
    expect((await stream.records()).map((r) => r.id)).toEqual([message.id])
  })

  test('a cut path that refuses connections rejects; once healed the client reconnects and the message is stored', async () => {
    const message = deliveredMessage()
    const reconnecting = new Promise<void>((resolve) => {
      void (async () => {
        for await (const s of nc.status()) if (s.type === 'disconnect') return resolve()
      })()
    })
    proxy.cut({ refuse: true })
    await reconnecting
    const error = await rejection(Promise.resolve(forwarder()(message, context())))
    expect(['TIMEOUT', 'BROKER'], String(error)).toContain((error as { code?: string }).code)
    expect(error.message).toContain('[outboxkit] [nats]')
    proxy.heal()
    await forwardOnceHealed(message)
    expect((await stream.records()).map((r) => r.id)).toEqual([message.id])
  })
})

describe('a relay through cuts and freezes', () => {
  test('every committed message ends in the stream exactly once', async () => {
    const db = await createPgOutbox('nats_faults')
    let relay: Relay | undefined
    try {
      const items = Array.from({ length: 120 }, (_, i) => ({ key: `k${i % 4}`, payload: { i } }))
      const committed = await db.commit('order.created', items)
      // The forwards hold at 20 and at 50 stored until the test has cut (then frozen) the path, so
      // each fault meets messages still to forward however fast the relay drains.
      const afterCut = deferred()
      const afterFreeze = deferred()
      const forward = forwarder()
      let stored = 0
      const gatedForward: typeof forward = async (message, context) => {
        if (stored >= 20) await afterCut.promise
        if (stored >= 50) await afterFreeze.promise
        await forward(message, context)
        stored++
      }
      relay = createRelay(db.outbox, {
        backend: db.backend,
        handlers: { 'order.created': gatedForward },
        concurrency: 8,
        batchSize: 10,
        pollIntervalMs: 50,
        retry: { baseMs: 20, maxMs: 300 },
        maxAttempts: 1_000,
      })
      const inStream = (n: number) =>
        waitFor(async () => ((await stream.records()).length >= n ? true : undefined), {
          timeoutMs: 30_000,
          what: `${n} messages in the stream`,
        })
      await relay.start()
      await inStream(20)
      const cutRetried = nextEvent(relay, 'retried', { timeoutMs: 15_000 })
      proxy.cut({ refuse: true })
      afterCut.resolve()
      await cutRetried
      proxy.heal()
      await inStream(50)
      const frozenRetried = nextEvent(relay, 'retried', {
        timeoutMs: 15_000,
        where: (e) => (e.error as { code?: string }).code === 'TIMEOUT',
      })
      proxy.pause()
      afterFreeze.resolve()
      await frozenRetried
      proxy.resume()
      await inStream(committed.length)
      await waitFor(async () => (relay!.stats.delivered >= committed.length ? true : undefined), {
        timeoutMs: 30_000,
        what: 'every message settled as delivered',
      })
      const ids = (await stream.records()).map((r) => r.id)
      expect(ids.length, 'each message stored once').toBe(committed.length)
      expect(new Set(ids)).toEqual(new Set(committed.map((c) => c.id)))
    } finally {
      proxy.resume()
      proxy.heal()
      await relay?.stop()
      await db.drop()
    }
  })
})
