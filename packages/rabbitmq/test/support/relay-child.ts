// A relay in a process of its own forwarding into RabbitMQ, so the crash test can SIGKILL it:
// `node --import tsx relay-child.ts` with the root tsconfig; configured by OUTBOXKIT_CHILD (JSON).
import { setTimeout as sleep } from 'node:timers/promises'
import { createRelay, defineOutbox } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import { rabbitmqForwarder } from '@outboxkit/rabbitmq'
import amqp from 'amqplib'

const config = JSON.parse(process.env.OUTBOXKIT_CHILD ?? 'null') as {
  databaseUrl: string
  rabbitmqUrl: string
  table: string
  exchange: string
  routingKey: string
} | null
if (!config) throw new Error('OUTBOXKIT_CHILD is not set')
process.stdin.on('end', () => process.exit(3))
process.stdin.resume()

const connection = await amqp.connect(config.rabbitmqUrl)
connection.on('error', () => {})
const forward = rabbitmqForwarder(() => connection.createConfirmChannel(), {
  exchange: config.exchange,
  routingKey: config.routingKey,
})
const relay = createRelay(defineOutbox({ table: config.table, orderedTopics: ['order.created'] }), {
  backend: pgBackend({ connectionString: config.databaseUrl, max: 4 }),
  // A little work per message, so a kill lands in the middle of the drain.
  handlers: { 'order.created': async (m, c) => sleep(3).then(() => forward(m, c)) },
  leaseMs: 1_500,
  pollIntervalMs: 50,
  retry: { baseMs: 20, maxMs: 200 },
})
await relay.start()
process.stdout.write('started\n')
process.on('SIGTERM', () => relay.stop().then(() => process.exit(0)))
