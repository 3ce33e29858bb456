// Test support: each test file's own exchange and queues on the real RabbitMQ at 127.0.0.1:5672
// (names unique per file and run: they carry process.pid), read back with amqplib's channel.get.
import type { ReceivedRecord } from '@outboxkit/conformance'
import amqp, { type Channel, type ChannelModel, type GetMessage } from 'amqplib'

/** The broker the tests use; RABBITMQ_URL overrides it. */
export const RABBITMQ_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672'

/** A unique name for this file and run, e.g. `ok.conformance.4242.x7f`. */
export function uniqueName(prefix: string): string {
  return `ok.${prefix}.${process.pid}.${Math.random().toString(36).slice(2, 8)}`
}

/** One message read back from a queue, as the forwarder conformance suite compares it. */
export function toReceivedRecord(message: GetMessage): ReceivedRecord {
  const { messageId, type, contentType, headers = {} } = message.properties
  const { 'outboxkit-topic': topic, 'outboxkit-key': key, ...rest } = headers as Record<string, string>
  expectSameTopic(type, topic)
  return {
    id: String(messageId),
    topic: String(type),
    key: key ?? null,
    headers: rest,
    payload: JSON.parse(message.content.toString('utf8')),
    contentType,
  }
}

function expectSameTopic(type: unknown, header: unknown): void {
  if (type !== header)
    throw new Error(`AMQP type ${String(type)} and outboxkit-topic ${String(header)} differ`)
}

/** A file's exchange with queues bound by routing key, on a connection of the test's own. */
export class TestBroker {
  readonly exchange = uniqueName('exchange')
  readonly #queues: string[] = []
  readonly #connections: ChannelModel[] = []
  #admin: Channel | undefined

  /** Opens the admin connection and declares the exchange (direct, not durable, auto-delete off). */
  async start(): Promise<this> {
    this.#admin = await (await this.connect()).createChannel()
    await this.#admin.assertExchange(this.exchange, 'direct', { durable: false })
    return this
  }

  get admin(): Channel {
    if (!this.#admin) throw new Error('TestBroker.start() first')
    return this.#admin
  }

  /** A connection closed in {@link TestBroker.close}; connection errors are expected in fault tests. */
  async connect(url = RABBITMQ_URL): Promise<ChannelModel> {
    const connection = await amqp.connect(url)
    connection.on('error', () => {})
    this.#connections.push(connection)
    return connection
  }

  /** Declares a queue bound to the exchange by `routingKey` (arguments: x-max-length-bytes...). */
  async queue(routingKey: string, args: Record<string, unknown> = {}): Promise<string> {
    const name = uniqueName('queue')
    await this.admin.assertQueue(name, { durable: false, arguments: args })
    await this.admin.bindQueue(name, this.exchange, routingKey)
    this.#queues.push(name)
    return name
  }

  /** Every message waiting in `queue`, taken off it (acknowledged on get), in queue order. */
  async drain(queue: string): Promise<GetMessage[]> {
    const taken: GetMessage[] = []
    for (;;) {
      const message = await this.admin.get(queue, { noAck: true })
      if (message === false) return taken
      taken.push(message)
    }
  }

  /** Deletes the file's queues and exchange and closes every connection it opened. */
  async close(): Promise<void> {
    for (const queue of this.#queues) await this.admin.deleteQueue(queue).catch(() => {})
    await this.admin.deleteExchange(this.exchange).catch(() => {})
    for (const connection of this.#connections) await connection.close().catch(() => {})
  }
}
