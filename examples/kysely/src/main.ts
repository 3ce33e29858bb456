/**
 * An order service on Kysely with outboxkit.
 *
 * Each order row and its `order.placed` message are written in ONE Kysely transaction, so both
 * commit or neither does. A relay then delivers every committed message to its handler.
 *
 * Runs on the PostgreSQL of DATABASE_URL (default: postgres://postgres@127.0.0.1:5432/test):
 *   npx tsx examples/kysely/src/main.ts
 */
import { createRelay, type DeliveredMessage, defineOutbox, migrate } from '@outboxkit/core'
import { type OutboxTable, publish } from '@outboxkit/kysely'
import { pgBackend } from '@outboxkit/pg'
import { type Generated, Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
// This run gets a schema of its own (dropped at the end), so reruns and the other examples on a
// shared server never collide. A real service would use its usual schema and table names.
const SCHEMA = `kysely_example_${process.pid}`

/** The payload of an `order.placed` message. */
interface OrderPlaced {
  orderId: string
  item: string
  cents: number
}

/** The Kysely `Database` interface: your tables, plus the outbox typed by `OutboxTable`. */
interface Database {
  orders: { id: string; item: string; cents: number; placed_at: Generated<Date> }
  outbox: OutboxTable<OrderPlaced>
}

// 1. One outbox definition, shared by producers (publish) and the relay.
const outbox = defineOutbox({ table: `${SCHEMA}.outbox` })

const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 5 })
const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }).withSchema(SCHEMA)
// The relay borrows the same pool; relay.stop() leaves it open (it is ours).
const backend = pgBackend({ pool, commandTimeoutMs: 5_000 })

async function setUp(): Promise<void> {
  await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(SCHEMA)}`.execute(db)
  await db.schema
    .createTable('orders')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('item', 'text', (c) => c.notNull())
    .addColumn('cents', 'integer', (c) => c.notNull())
    .addColumn('placed_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  // 2. Create the outbox table and its indexes (idempotent). In a Kysely migration you would
  //    run `sql.raw(outboxDdl(outbox)).execute(db)` instead.
  await migrate(outbox, backend)
}

/** 3. The order and its message in one transaction: a declined card rolls back both. */
async function placeOrder(order: OrderPlaced & { card: 'ok' | 'declined' }): Promise<void> {
  try {
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('orders')
        .values({ id: order.orderId, item: order.item, cents: order.cents })
        .execute()
      const { id } = await publish(outbox, trx, {
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

/** 4. A batch on a ControlledTransaction: each order in a savepoint, so one bad order drops only itself. */
async function placeBatch(orders: OrderPlaced[]): Promise<void> {
  const trx = await db.startTransaction().execute()
  try {
    for (const order of orders) {
      const sp = await trx.savepoint('order').execute()
      try {
        if (order.cents <= 0) throw new Error('price must be positive')
        await sp
          .insertInto('orders')
          .values({ id: order.orderId, item: order.item, cents: order.cents })
          .execute()
        await publish(outbox, sp, { topic: 'order.placed', key: order.orderId, payload: order })
        await sp.releaseSavepoint('order').execute()
      } catch (err) {
        await sp.rollbackToSavepoint('order').execute()
        console.log(`[shop]  batch: order ${order.orderId} skipped (${(err as Error).message})`)
      }
    }
    await trx.commit().execute()
    console.log('[shop]  batch committed')
  } catch (err) {
    await trx.rollback().execute()
    throw err
  }
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
  relay.on('error', ({ error, during }) => console.error(`[relay] ${during} failed:`, error))
  await relay.start()

  try {
    await placeOrder({ orderId: 'A-1', item: 'teapot', cents: 2_500, card: 'ok' })
    await placeOrder({ orderId: 'A-2', item: 'kettle', cents: 4_000, card: 'declined' })
    await placeBatch([
      { orderId: 'B-1', item: 'cups', cents: 1_200 },
      { orderId: 'B-2', item: 'saucers', cents: 0 },
      { orderId: 'B-3', item: 'spoons', cents: 800 },
    ])

    // Wait (bounded) until the relay has handled the three committed orders and the outbox is empty.
    const deadline = Date.now() + 10_000
    for (;;) {
      const left = await db
        .selectFrom('outbox')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow()
      if (delivered.length >= 3 && Number(left.n) === 0) break
      if (Date.now() > deadline) throw new Error(`timed out: ${delivered.length} of 3 messages delivered`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  } finally {
    await relay.stop({ graceMs: 5_000 })
  }

  const orders = await db.selectFrom('orders').select('id').orderBy('id').execute()
  const shipped = delivered.map((m) => (m.payload as OrderPlaced).orderId).sort()
  console.log(`[shop]  orders in the database: ${orders.map((o) => o.id).join(', ')}`)
  console.log(`[shop]  orders shipped:         ${shipped.join(', ')}`)
  if (shipped.join() !== orders.map((o) => o.id).join())
    throw new Error('shipped orders differ from committed orders')
  console.log('[shop]  every committed order was shipped exactly once; rolled-back ones never were')
}

main()
  .catch((err) => {
    console.error(err)
    process.exitCode = 1
  })
  .finally(async () => {
    await sql`DROP SCHEMA IF EXISTS ${sql.id(SCHEMA)} CASCADE`.execute(db).catch(() => {})
    await db.destroy()
  })
