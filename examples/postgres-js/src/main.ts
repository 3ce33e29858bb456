/**
 * An order service on postgres.js with outboxkit.
 *
 * Each order row and its `order.placed` message are written in ONE `sql.begin` transaction, so
 * both commit or neither does. A relay on the same `sql` then delivers every committed message.
 *
 * Runs on the PostgreSQL of DATABASE_URL (default: postgres://postgres@127.0.0.1:5432/test):
 *   npx tsx examples/postgres-js/src/main.ts
 */
import { createRelay, type DeliveredMessage, defineOutbox, migrate } from '@outboxkit/core'
import { postgresJsBackend, publish } from '@outboxkit/postgres-js'
import postgres from 'postgres'

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
// This run gets a schema of its own (dropped at the end), so reruns and the other examples on a
// shared server never collide. A real service would use its usual schema and table names.
const SCHEMA = `postgres_js_example_${process.pid}`

/** The payload of an `order.placed` message. */
interface OrderPlaced {
  orderId: string
  item: string
  cents: number
}

// 1. One outbox definition, shared by producers (publish) and the relay.
const outbox = defineOutbox({ table: `${SCHEMA}.outbox` })

const sql = postgres(DATABASE_URL, { max: 5, onnotice: () => {} })
// The relay uses the same sql; relay.stop() leaves it open (it is ours, we end it below).
const backend = postgresJsBackend(sql, { commandTimeoutMs: 5_000 })

async function setUp(): Promise<void> {
  await sql`CREATE SCHEMA IF NOT EXISTS ${sql(SCHEMA)}`
  await sql`CREATE TABLE IF NOT EXISTS ${sql(SCHEMA)}.orders (
    id text PRIMARY KEY,
    item text NOT NULL,
    cents integer NOT NULL CHECK (cents > 0),
    placed_at timestamptz NOT NULL DEFAULT now()
  )`
  // 2. The outbox table and its indexes (idempotent). With your own migration tool, run the SQL
  //    of outboxDdl(outbox) from @outboxkit/core instead.
  await migrate(outbox, backend)
}

/** 3. The order and its message in one transaction: a declined card rolls back both. */
async function placeOrder(order: OrderPlaced & { card: 'ok' | 'declined' }): Promise<void> {
  try {
    await sql.begin(async (tx) => {
      await tx`INSERT INTO ${tx(SCHEMA)}.orders (id, item, cents) VALUES (${order.orderId}, ${order.item}, ${order.cents})`
      // Always pass the tx of this callback, and await publish before the callback returns.
      const { id } = await publish(outbox, tx, {
        topic: 'order.placed',
        key: order.orderId,
        payload: { orderId: order.orderId, item: order.item, cents: order.cents },
        dedupKey: `order-placed:${order.orderId}`,
      })
      console.log(`[shop]  order ${order.orderId} written with message ${id}`)
      if (order.card === 'declined') throw new Error('card declined')
    })
    console.log(`[shop]  order ${order.orderId} committed`)
  } catch (err) {
    console.log(
      `[shop]  order ${order.orderId} rolled back (${(err as Error).message}): no order row, no message`,
    )
  }
}

/** 4. A batch in one transaction, each order in a savepoint: a bad order drops only itself. */
async function placeBatch(orders: OrderPlaced[]): Promise<void> {
  await sql.begin(async (tx) => {
    for (const order of orders) {
      await tx
        .savepoint(async (sp) => {
          await sp`INSERT INTO ${sp(SCHEMA)}.orders (id, item, cents) VALUES (${order.orderId}, ${order.item}, ${order.cents})`
          await publish(outbox, sp, { topic: 'order.placed', key: order.orderId, payload: order })
        })
        .catch((err: Error) => console.log(`[shop]  batch: order ${order.orderId} skipped (${err.message})`))
    }
  })
  console.log('[shop]  batch committed')
}

async function main(): Promise<void> {
  await setUp()
  const delivered: DeliveredMessage[] = []
  const relay = createRelay(outbox, {
    backend,
    pollIntervalMs: 500,
    handlers: {
      // 5. Runs after the commit, at least once: make it idempotent (message.id is a good key).
      'order.placed': async (message: DeliveredMessage) => {
        const order = message.payload as OrderPlaced
        console.log(`[relay] ship ${order.item} for order ${order.orderId} (attempt ${message.attempts})`)
        delivered.push(message)
      },
    },
  })
  relay.on('error', ({ error, during }) => console.error(`[relay] ${during}: ${(error as Error).message}`))
  await relay.start()

  await placeOrder({ orderId: 'o-1', item: 'keyboard', cents: 4_900, card: 'ok' })
  await placeOrder({ orderId: 'o-2', item: 'monitor', cents: 19_900, card: 'declined' })
  await placeBatch([
    { orderId: 'o-3', item: 'mouse', cents: 1_900 },
    { orderId: 'o-4', item: 'gift card', cents: 0 }, // violates the CHECK: only its savepoint rolls back
    { orderId: 'o-5', item: 'cable', cents: 900 },
  ])

  // Wait (bounded) for the three committed orders to be delivered.
  const deadline = Date.now() + 15_000
  while (delivered.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  await relay.stop({ graceMs: 5_000 })

  const shipped = delivered.map((m) => (m.payload as OrderPlaced).orderId).sort()
  const [row] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM ${sql(SCHEMA)}.outbox`
  const n = row?.n
  console.log(`[done]  shipped ${shipped.join(', ')}; ${n} message(s) left in the outbox`)
  if (shipped.join() !== 'o-1,o-3,o-5' || n !== 0) throw new Error('unexpected outcome')
}

try {
  await main()
} finally {
  await sql`DROP SCHEMA IF EXISTS ${sql(SCHEMA)} CASCADE`
  await sql.end()
}
