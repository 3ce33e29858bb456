// The brokers of the forward scenario, seen from a child process: a target of the run's own
// (a JetStream stream, a RabbitMQ exchange and durable queue, a Redis stream key), the outboxkit
// forwarder into it, the bare client's confirmed publish of the same message, and a count of
// what the broker holds.
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { headers as natsHeaders } from '@nats-io/nats-core'
import { connect as connectNats } from '@nats-io/transport-node'
import type { Handler } from '@outboxkit/core'
import { jetStreamForwarder } from '@outboxkit/nats'
import { rabbitmqForwarder } from '@outboxkit/rabbitmq'
import { redisStreamForwarder } from '@outboxkit/redis'
import amqp from 'amqplib'
import { createClient } from 'redis'

/** The brokers of the scenario. */
export type BrokerName = 'nats' | 'rabbitmq' | 'redis'
export const BROKERS: readonly BrokerName[] = ['nats', 'rabbitmq', 'redis']

/** One message as both contenders send it. */
export interface BareMessage {
  readonly id: string
  readonly topic: string
  readonly payload: unknown
}

/** A broker target of one job. */
export interface BrokerTarget {
  /** The outboxkit forwarder into the target, on its defaults. */
  forwarder(): Handler
  /** The bare client's publish of `m`, resolved on the broker's confirmation. */
  bare(m: BareMessage): Promise<unknown>
  /** How many messages the target holds. */
  stored(): Promise<number>
  close(): Promise<void>
}

const NATS_URL = process.env.NATS_URL ?? '127.0.0.1:4222'
const RABBITMQ_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

async function natsTarget(name: string): Promise<BrokerTarget> {
  const nc = await connectNats({ servers: NATS_URL })
  const jsm = await jetstreamManager(nc)
  const subject = `bench.${name}.orders`
  await jsm.streams.add({ name, subjects: [subject] })
  const js = jetstream(nc)
  return {
    forwarder: () => jetStreamForwarder(js, { subject }),
    bare: (m) => {
      const h = natsHeaders()
      h.set('outboxkit-topic', m.topic)
      h.set('content-type', 'application/json')
      return js.publish(subject, JSON.stringify(m.payload), { msgID: m.id, headers: h })
    },
    stored: async () => (await jsm.streams.info(name)).state.messages,
    close: async () => {
      await jsm.streams.delete(name).catch(() => false)
      await nc.close()
    },
  }
}

async function rabbitmqTarget(name: string): Promise<BrokerTarget> {
  const connection = await amqp.connect(RABBITMQ_URL)
  connection.on('error', () => {})
  const admin = await connection.createChannel()
  await admin.assertExchange(name, 'direct', { durable: false })
  await admin.assertQueue(name, { durable: true })
  await admin.bindQueue(name, name, 'orders')
  const channel = await connection.createConfirmChannel()
  return {
    forwarder: () => rabbitmqForwarder(channel, { exchange: name, routingKey: 'orders' }),
    bare: (m) =>
      new Promise<void>((resolve, reject) => {
        const options = {
          persistent: true,
          mandatory: true,
          messageId: m.id,
          type: m.topic,
          contentType: 'application/json',
          headers: { 'outboxkit-topic': m.topic },
        }
        channel.publish(name, 'orders', Buffer.from(JSON.stringify(m.payload)), options, (err) =>
          err ? reject(err) : resolve(),
        )
      }),
    stored: async () => (await admin.checkQueue(name)).messageCount,
    close: async () => {
      await admin.deleteQueue(name).catch(() => {})
      await admin.deleteExchange(name).catch(() => {})
      await connection.close().catch(() => {})
    },
  }
}

async function redisTarget(name: string): Promise<BrokerTarget> {
  const client = createClient({ url: REDIS_URL })
  client.on('error', () => {})
  await client.connect()
  const key = `outboxkit:bench:${name}`
  await client.del(key)
  return {
    forwarder: () => redisStreamForwarder(client, { stream: key }),
    bare: (m) =>
      client.xAdd(key, '*', { id: m.id, topic: m.topic, headers: '{}', payload: JSON.stringify(m.payload) }),
    stored: () => client.xLen(key),
    close: async () => {
      await client.del(key)
      client.destroy()
    },
  }
}

/** Opens the job's own target on `broker`, named `name` (unique per job). */
export function openTarget(broker: BrokerName, name: string): Promise<BrokerTarget> {
  switch (broker) {
    case 'nats':
      return natsTarget(name)
    case 'rabbitmq':
      return rabbitmqTarget(name)
    case 'redis':
      return redisTarget(name)
  }
}
