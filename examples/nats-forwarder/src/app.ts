// The whole example as one function (src/main.ts runs it; a test runs it against the real NATS):
// orders committed with their message, one rolled back; the relay forwards each committed
// message to JetStream (Nats-Msg-Id = the outbox message id); the shipping consumer ships each
// order exactly once.
import { randomUUID } from 'node:crypto'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { createRelay, migrate } from '@outboxkit/core'
import { jetStreamForwarder } from '@outboxkit/nats'
import { consumeOrders } from './consumer.js'
import { type Database, openDatabase } from './database.js'
import { BUSINESS_DDL, outbox, TABLES } from './schema.js'

/** Where the example runs. */
export interface ExampleOptions {
  /** The NATS server (JetStream enabled), e.g. `127.0.0.1:4222`. */
  natsServers: string
  /** Your PostgreSQL; unset: embedded PGlite. */
  databaseUrl?: string
  log?: (line: string) => void
}

/** What the run ended with. */
export interface ExampleSummary {
  committed: string[]
  rolledBack: string[]
  /** Messages the stream holds. */
  inStream: number
  /** Shipments per order id. */
  shipments: Record<string, number>
  duplicatesSkipped: number
}

const ITEMS = ['book', 'lamp', 'chair', 'mug', 'kettle']

/** Places an order and publishes `order.created` in one transaction; `declined` rolls both back. */
async function placeOrder(db: Database, item: string, declined: boolean): Promise<string> {
  const orderId = randomUUID()
  await db.transaction(async (tx) => {
    await tx.query(`INSERT INTO ${TABLES.orders} (id, item) VALUES ($1, $2)`, [orderId, item])
    await tx.publish({ topic: 'order.created', key: orderId, payload: { orderId, item } })
    if (declined) throw new Error('card declined')
  })
  return orderId
}

/** Runs the example end to end and returns what happened; removes its stream and tables. */
export async function runExample(options: ExampleOptions): Promise<ExampleSummary> {
  const log = options.log ?? console.log
  const db = await openDatabase(options.databaseUrl)
  const nc = await connect({ servers: options.natsServers })
  const jsm = await jetstreamManager(nc)
  const stream = `EXAMPLE_ORDERS_${process.pid}`
  const subjectPrefix = `example.${process.pid}.orders`
  try {
    log(`database: ${db.label}; NATS: ${options.natsServers}, stream ${stream}`)
    for (const ddl of BUSINESS_DDL) await db.query(ddl)
    await migrate(outbox, db.backend)
    // Inside the duplicate window (2 min) JetStream drops a message whose Nats-Msg-Id it holds.
    await jsm.streams.add({
      name: stream,
      subjects: [`${subjectPrefix}.>`],
      duplicate_window: 120_000_000_000,
    })
    await jsm.consumers.add(stream, { durable_name: 'shipping', ack_policy: 'explicit' })

    const committed: string[] = []
    const rolledBack: string[] = []
    for (const [i, item] of ITEMS.entries()) {
      const declined = i === 2
      try {
        committed.push(await placeOrder(db, item, declined))
        log(`  order for a ${item}: committed with its message`)
      } catch {
        rolledBack.push(item)
        log(`  order for a ${item}: card declined, order and message rolled back together`)
      }
    }

    const js = jetstream(nc)
    const relay = createRelay(outbox, {
      backend: db.backend,
      handlers: {
        'order.created': jetStreamForwarder(js, { subject: (m) => `${subjectPrefix}.${m.topic}` }),
      },
      pollIntervalMs: 100,
    })
    await relay.start()
    const stats = await consumeOrders(
      js,
      db,
      stream,
      'shipping',
      (s) => s.applied >= committed.length && s.duplicatesSkipped >= 1,
      log,
    )
    await relay.stop()

    const rows = await db.query<{ order_id: string; n: number }>(
      `SELECT order_id, count(*)::int AS n FROM ${TABLES.shipments} GROUP BY order_id`,
    )
    const summary: ExampleSummary = {
      committed,
      rolledBack,
      inStream: (await jsm.streams.info(stream)).state.messages,
      shipments: Object.fromEntries(rows.map((r) => [r.order_id, Number(r.n)])),
      duplicatesSkipped: stats.duplicatesSkipped,
    }
    log(
      `done: ${committed.length} orders committed, ${summary.inStream} messages in the stream, ${rows.length} shipped once each, ${stats.duplicatesSkipped} redelivery skipped`,
    )
    return summary
  } finally {
    await jsm.streams.delete(stream).catch(() => false)
    await nc.close()
    await db.close()
  }
}
