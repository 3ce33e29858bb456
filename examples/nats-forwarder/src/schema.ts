// The example's tables and outbox. On a shared server each run gets tables of its own (dropped
// at the end), so reruns and parallel runs never collide.
import { defineOutbox } from '@outboxkit/core'

const suffix = process.env.DATABASE_URL ? `_nats_example_${process.pid}` : ''

/** The tables: the producer's (orders, outbox) and the consumer's (shipments, processed ids). */
export const TABLES = {
  orders: `orders${suffix}`,
  outbox: `outbox${suffix}`,
  shipments: `shipments${suffix}`,
  processed: `processed_messages${suffix}`,
} as const

/** The outbox: `order.created` is ordered by key (the order id). */
export const outbox = defineOutbox({ table: TABLES.outbox, orderedTopics: ['order.created'] })

/** The DDL of the business tables (the outbox table comes from `migrate`). */
export const BUSINESS_DDL = [
  `CREATE TABLE IF NOT EXISTS ${TABLES.orders} (id text PRIMARY KEY, item text NOT NULL)`,
  // No unique order_id on purpose: only the dedup below keeps an effect from happening twice.
  `CREATE TABLE IF NOT EXISTS ${TABLES.shipments} (id serial PRIMARY KEY, order_id text NOT NULL, item text NOT NULL)`,
  // The consumer's dedup: one row per message it has applied, written with its effect.
  `CREATE TABLE IF NOT EXISTS ${TABLES.processed} (message_id text PRIMARY KEY)`,
]
