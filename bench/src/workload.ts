import { randomUUID } from 'node:crypto'

/** The topic every contender uses. */
export const TOPIC = 'order.created'
/** The outbox table of the outboxkit and bare-SQL contenders. */
export const OUTBOX_TABLE = 'bench_outbox'
/** The business table of the publish scenarios. */
export const ORDERS_TABLE = 'bench_orders'

/** The message payload: small and realistic (about 90 bytes of JSON), the same for every contender. */
export function payloadFor(seq: number): { orderId: string; seq: number; amount: number; currency: string } {
  return { orderId: randomUUID(), seq, amount: 42.5, currency: 'EUR' }
}

/** DDL of the business table: a typical small order row with a primary key. */
export const ORDERS_DDL = `CREATE TABLE IF NOT EXISTS ${ORDERS_TABLE} (
  id uuid PRIMARY KEY,
  customer text NOT NULL,
  amount numeric(12,2) NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
)`

/** The business INSERT every publish variant runs first. */
export const ORDER_INSERT = `INSERT INTO ${ORDERS_TABLE} (id, customer, amount) VALUES ($1, $2, $3)`
