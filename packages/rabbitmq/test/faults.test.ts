// Faults between the forwarder's client and RabbitMQ, through a TCP proxy this file owns: a frozen
// path times out within timeoutMs and passes once it moves again; a cut path (or a closed
// connection) rejects, and a channel function opens a fresh channel once it heals.
import {
  deliveredMessage,
  expectOutboxError,
  failure,
  type PausableProxy,
  rejection,
  startPausableProxy,
  waitFor,
} from '@outboxkit/conformance'
import { rabbitmqForwarder } from '@outboxkit/rabbitmq'
import type { ChannelModel } from 'amqplib'
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest'
import { RABBITMQ_URL, TestBroker } from './rabbitmq-broker.js'

const context = () => ({ signal: new AbortController().signal })
const TIMEOUT_MS = 400

let broker: TestBroker
let proxy: PausableProxy
let queue: string
beforeAll(async () => {
  broker = await new TestBroker().start()
  queue = await broker.queue('faults')
  const target = new URL(RABBITMQ_URL)
  proxy = await startPausableProxy({ host: target.hostname, port: Number(target.port || 5672) })
})
afterEach(() => {
  proxy.heal()
  proxy.resume()
})
afterAll(async () => {
  await proxy.close()
  await broker.close()
})

/** A forwarder whose channel function connects through the proxy; `connections` are the ones it opened. */
function forwarderThroughProxy() {
  const connections: ChannelModel[] = []
  const forward = rabbitmqForwarder(
    async () => {
      const connection = await broker.connect(proxy.urlFor(RABBITMQ_URL))
      connections.push(connection)
      return connection.createConfirmChannel()
    },
    { exchange: broker.exchange, routingKey: 'faults', timeoutMs: TIMEOUT_MS },
  )
  return { forward: (m = deliveredMessage()) => Promise.resolve(forward(m, context())), connections }
}

const idsInQueue = async () => (await broker.drain(queue)).map((m) => String(m.properties.messageId))

test('a frozen path rejects with TIMEOUT within timeoutMs; once it moves the next forward is confirmed', async () => {
  const { forward, connections } = forwarderThroughProxy()
  await forward()
  proxy.pause()
  const frozen = deliveredMessage()
  const { error, ms } = await failure(() => forward(frozen))
  expectOutboxError(error, 'TIMEOUT', {
    source: 'rabbitmq',
    message: [`${TIMEOUT_MS} ms`, frozen.id, 'routing key "faults"'],
  })
  expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 20)
  expect(ms).toBeLessThan(TIMEOUT_MS + 5_000)
  proxy.resume()
  const after = deliveredMessage()
  await forward(after)
  expect(connections).toHaveLength(1)
  // At least once: the frozen message was published, so the broker holds it too.
  const ids = await waitFor(async () => {
    const seen = await idsInQueue()
    return seen.length >= 3 ? seen : undefined
  })
  expect(ids.slice(1)).toEqual([frozen.id, after.id])
})

test('a cut path rejects with BROKER; once it heals the channel function opens a fresh channel', async () => {
  const { forward, connections } = forwarderThroughProxy()
  await forward()
  const closed = new Promise((resolve) => connections[0]!.once('close', resolve))
  proxy.cut({ refuse: true })
  await closed
  expectOutboxError(await rejection(forward()), 'BROKER', {
    source: 'rabbitmq',
    message: ['channel function of rabbitmqForwarder failed'],
  })
  proxy.heal()
  const healed = deliveredMessage()
  await forward(healed)
  expect(connections).toHaveLength(2)
  expect((await idsInQueue()).at(-1)).toBe(healed.id)
})

test('a path cut while waiting for the confirm rejects with BROKER (channel closed), not a success', async () => {
  const { forward, connections } = forwarderThroughProxy()
  await forward()
  proxy.pause()
  const waiting = rejection(forward())
  // The publish is on its way (held by the frozen path); then the connection is reset.
  proxy.cut({ refuse: true })
  expectOutboxError(await waiting, 'BROKER', {
    source: 'rabbitmq',
    message: ['closed before RabbitMQ confirmed'],
  })
  proxy.resume()
  proxy.heal()
  await forward()
  expect(connections).toHaveLength(2)
  await broker.drain(queue)
})

test('a connection the application closes: the next forward gets a fresh channel from the function', async () => {
  const { forward, connections } = forwarderThroughProxy()
  await forward()
  await connections[0]!.close()
  await forward()
  expect(connections).toHaveLength(2)
  expect(await idsInQueue()).toHaveLength(2)
})
