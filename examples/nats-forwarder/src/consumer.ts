// The shipping service: consumes `order.created` from the JetStream stream and ships each order
// once, although JetStream delivers at least once. It dedups by hand: the message's Nats-Msg-Id
// (the outbox message id) goes into `processed_messages` in the SAME transaction as the shipment,
// so the effect and the "seen" mark commit together; a redelivery finds the mark and only acks.
// (An `@outboxkit` inbox, `processOnce`, is being built to do this for you; this is the by-hand
// version it will replace.)
import type { JetStreamClient, JsMsg } from '@nats-io/jetstream'
import type { Database } from './database.js'
import { TABLES } from './schema.js'

/** What the consumer did. */
export interface ConsumerStats {
  /** Messages whose effect was applied (a shipment written). */
  applied: number
  /** Redeliveries recognised by their Nats-Msg-Id and only acknowledged. */
  duplicatesSkipped: number
}

/** Applies one message: its dedup mark and its shipment in one transaction. False: already done. */
async function applyOnce(db: Database, msg: JsMsg): Promise<boolean> {
  const messageId = msg.headers?.get('Nats-Msg-Id')
  if (!messageId) throw new Error(`message ${msg.seq} has no Nats-Msg-Id: it did not come from the outbox`)
  const order = msg.json<{ orderId: string; item: string }>()
  return db.transaction(async (tx) => {
    const marked = await tx.query(
      `INSERT INTO ${TABLES.processed} (message_id) VALUES ($1) ON CONFLICT DO NOTHING RETURNING message_id`,
      [messageId],
    )
    if (marked.length === 0) return false
    await tx.query(`INSERT INTO ${TABLES.shipments} (order_id, item) VALUES ($1, $2)`, [
      order.orderId,
      order.item,
    ])
    return true
  })
}

/**
 * Consumes the durable consumer `durable` of `stream` until `done(stats)` is true. To show the
 * dedup at work, the first message is handled as if the service crashed after its commit and
 * before its ack: it is nak'ed, JetStream redelivers it, and the redelivery is skipped.
 */
export async function consumeOrders(
  js: JetStreamClient,
  db: Database,
  stream: string,
  durable: string,
  done: (stats: ConsumerStats) => boolean | Promise<boolean>,
  log: (line: string) => void,
): Promise<ConsumerStats> {
  const stats: ConsumerStats = { applied: 0, duplicatesSkipped: 0 }
  const messages = await (await js.consumers.get(stream, durable)).consume({ max_messages: 50 })
  let crashedOnce = false
  for await (const msg of messages) {
    if (await applyOnce(db, msg)) {
      stats.applied++
      if (!crashedOnce) {
        crashedOnce = true
        log(`    consumer: shipped, then "crashed" before acking message ${msg.headers?.get('Nats-Msg-Id')}`)
        msg.nak()
        continue
      }
    } else {
      stats.duplicatesSkipped++
      log(`    consumer: ${msg.headers?.get('Nats-Msg-Id')} again (redelivery): already shipped, only acked`)
    }
    msg.ack()
    if (await done(stats)) break
  }
  await messages.close()
  return stats
}
