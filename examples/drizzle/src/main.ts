/**
 * An order service on Drizzle ORM (node-postgres driver) with outboxkit.
 *
 * Each order row and its `order.placed` message are written in ONE `db.transaction`, so both
 * commit or neither does. A relay on the same pg Pool then delivers every committed message.
 *
 * Runs on the PostgreSQL of DATABASE_URL (default: postgres://postgres@127.0.0.1:5432/test):
 *   npx tsx examples/drizzle/src/main.ts
 */
import { createRelay, type DeliveredMessage, defineOutbox, isOutboxError, migrate } from '@outboxkit/core'
import { outboxTable, publish } from '@outboxkit/drizzle'
import { pgBackend } from '@outboxkit/pg'
import { eq, sql, TransactionRollbackError } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import { check, integer, pgSchema, text, timestamp } from 'drizzle-orm/pg-core'
import pg from 'pg'

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
// This run gets a schema of its own (dropped at the end), so reruns and the other examples on a
// shared server never collide. A real service would use its usual schema and table names.
const SCHEMA = `drizzle_example_${process.pid}`

// 1. One outbox definition, shared by producers (publish) and the relay.
const outbox = defineOutbox({ table: `${SCHEMA}.outbox` })

// 2. The Drizzle schema (in a real app: db/schema.ts, read by drizzle-kit). outboxTable(outbox)
//    is the outbox table as Drizzle sees it, so `drizzle-kit generate` writes its migration too.
const shop = pgSchema(SCHEMA)
export const orders = shop.table(
  'orders',
  {
    id: text('id').primaryKey(),
    item: text('item').notNull(),
    cents: integer('cents').notNull(),
    placedAt: timestamp('placed_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [check('orders_cents_check', sql`${t.cents} > 0`)],
)
export const outboxRows = outboxTable(outbox)

/** The payload of an `order.placed` message. */
interface OrderPlaced {
  orderId: string
  item: string
  cents: number
}

const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 5 })
const db = drizzle({ client: pool })
// The relay uses the same pool; relay.stop() leaves it open (it is ours, we end it below).
const backend = pgBackend({ pool, commandTimeoutMs: 5_000 })

async function setUp(): Promise<void> {
  // This example creates its tables itself so it runs without a drizzle-kit step. In a real app,
  // `drizzle-kit generate` / `migrate` create both from the schema above.
  await db.execute(sql`CREATE SCHEMA IF NOT EXISTS ${sql.identifier(SCHEMA)}`)
  await db.execute(sql`CREATE TABLE IF NOT EXISTS ${orders} (
    id text PRIMARY KEY,
    item text NOT NULL,
    cents integer NOT NULL CONSTRAINT orders_cents_check CHECK (cents > 0),
    placed_at timestamptz NOT NULL DEFAULT now()
  )`)
  await migrate(outbox, backend) // the outbox table and its indexes, the same as outboxTable(outbox)
}

/** 3. The order and its message in one transaction: a declined card rolls back both. */
async function placeOrder(order: OrderPlaced & { card: 'ok' | 'declined' }): Promise<void> {
  try {
    await db.transaction(async (tx) => {
      await tx.insert(orders).values({ id: order.orderId, item: order.item, cents: order.cents })
      // Always pass the tx of this callback (not db), and await publish before the callback returns.
      const { id } = await publish(outbox, tx, {
        topic: 'order.placed',
        key: order.orderId,
        payload: { orderId: order.orderId, item: order.item, cents: order.cents },
        dedupKey: `order-placed:${order.orderId}`,
      })
      console.log(`[shop]  order ${order.orderId} written with message ${id}`)
      if (order.card === 'declined') {
        console.log(`[shop]  card declined for order ${order.orderId}: tx.rollback()`)
        tx.rollback() // throws TransactionRollbackError: Drizzle rolls the whole transaction back
      }
    })
    console.log(`[shop]  order ${order.orderId} committed`)
  } catch (err) {
    if (!(err instanceof TransactionRollbackError)) throw err
    console.log(`[shop]  order ${order.orderId} rolled back: no order row, no message`)
  }
}

/** 4. A batch in one transaction, each order in a nested transaction (a savepoint). */
async function placeBatch(batch: OrderPlaced[]): Promise<void> {
  await db.transaction(async (tx) => {
    for (const order of batch) {
      await tx
        .transaction(async (sp) => {
          await sp.insert(orders).values({ id: order.orderId, item: order.item, cents: order.cents })
          await publish(outbox, sp, { topic: 'order.placed', key: order.orderId, payload: order })
        })
        .catch((err: Error) => {
          // Drizzle wraps the driver's error; its cause says what PostgreSQL refused.
          const reason = (err.cause as Error | undefined)?.message ?? err.message
          console.log(`[shop]  batch: order ${order.orderId} skipped (${reason})`)
        })
    }
  })
  console.log('[shop]  batch committed')
}

/** 5. The root db is not a transaction: publish refuses it and writes nothing. */
async function publishOutsideATransaction(): Promise<void> {
  const err = await publish(outbox, db as never, { topic: 'order.placed', payload: {} }).catch(
    (e: unknown) => e,
  )
  if (!isOutboxError(err, 'NOT_IN_TRANSACTION')) throw new Error('publish on db should be refused')
  console.log(`[shop]  ${err.message.slice(0, 120)}...`)
}

async function main(): Promise<void> {
  await setUp()
  const delivered: DeliveredMessage[] = []
  const relay = createRelay(outbox, {
    backend,
    pollIntervalMs: 500,
    handlers: {
      // 6. Runs after the commit, at least once: make it idempotent (message.id is a good key).
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
  await publishOutsideATransaction()

  // Wait (bounded) for the three committed orders to be delivered.
  const deadline = Date.now() + 15_000
  while (delivered.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  await relay.stop({ graceMs: 5_000 })

  const shipped = delivered.map((m) => (m.payload as OrderPlaced).orderId).sort()
  // The outbox is a Drizzle table like any other: delivered rows are deleted by default.
  const left = await db.$count(outboxRows)
  const pending = await db
    .select({ id: outboxRows.id })
    .from(outboxRows)
    .where(eq(outboxRows.state, 'pending'))
  const placed = (await db.select({ id: orders.id }).from(orders)).map((o) => o.id).sort()
  console.log(
    `[done]  orders ${placed.join(', ')}; shipped ${shipped.join(', ')}; ${left} message(s) left in the outbox`,
  )
  if (
    shipped.join() !== 'o-1,o-3,o-5' ||
    placed.join() !== shipped.join() ||
    left !== 0 ||
    pending.length !== 0
  ) {
    throw new Error('unexpected outcome')
  }
}

try {
  await main()
} finally {
  await db.execute(sql`DROP SCHEMA IF EXISTS ${sql.identifier(SCHEMA)} CASCADE`)
  await pool.end()
}
