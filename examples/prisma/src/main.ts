/**
 * An order service on Prisma 7 with outboxkit.
 *
 * Each order row and its `order.placed` message are written in ONE Prisma interactive transaction,
 * so both commit or neither does. A relay (on node-postgres) then delivers every committed message.
 *
 * Runs on the PostgreSQL of DATABASE_URL (default: postgres://postgres@127.0.0.1:5432/test), and
 * generates its Prisma client first when it is missing:
 *   npx tsx --tsconfig tsconfig.json examples/prisma/src/main.ts
 */
import { createRelay, type DeliveredMessage, defineOutbox, migrate } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import { publish } from '@outboxkit/prisma'
import { PrismaPg } from '@prisma/adapter-pg'
import { loadPrismaClient, type OrderPrismaClient } from './generated-client.js'

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
// This run gets a schema of its own (dropped at the end), so reruns and the other examples on a
// shared server never collide. A real service would use its usual schema.
const SCHEMA = `prisma_example_${process.pid}`

/** The payload of an `order.placed` message. */
interface OrderPlaced {
  orderId: string
  customer: string
  totalCents: number
}

// 1. One outbox definition, shared by producers (publish) and the relay. The table is the
//    OutboxMessage model of prisma/schema.prisma, here in this run's schema.
const outbox = defineOutbox({ table: `${SCHEMA}.outbox` })

// 2. Prisma 7 talks to PostgreSQL through a driver adapter. `schema` places the models.
const PrismaClient = await loadPrismaClient()
const prisma: OrderPrismaClient = new PrismaClient({
  adapter: new PrismaPg({ connectionString: DATABASE_URL }, { schema: SCHEMA }),
})
// The relay has a pool of its own, which it owns and closes in relay.stop().
const backend = pgBackend({ connectionString: DATABASE_URL, commandTimeoutMs: 5_000 })

async function setUp(): Promise<void> {
  // In an app, Prisma Migrate creates these tables: see docs/adapters/prisma.md. The example
  // creates them itself so that it runs with no migration step.
  await prisma.$executeRawUnsafe(`CREATE SCHEMA IF NOT EXISTS "${SCHEMA}"`)
  await prisma.$executeRawUnsafe(`CREATE TABLE IF NOT EXISTS "${SCHEMA}".orders (
    id uuid PRIMARY KEY,
    customer text NOT NULL,
    total_cents integer NOT NULL,
    created_at timestamptz(6) NOT NULL DEFAULT now()
  )`)
  await migrate(outbox, backend) // the outbox table and its indexes, idempotent
}

/** 3. The order and its message in one transaction: a declined card rolls back both. */
async function placeOrder(
  customer: string,
  totalCents: number,
  card: 'ok' | 'declined',
): Promise<string | null> {
  try {
    const order = await prisma.$transaction(async (tx) => {
      const order = await tx.order.create({ data: { customer, totalCents } })
      const { id } = await publish(outbox, tx, {
        topic: 'order.placed',
        key: order.id,
        payload: { orderId: order.id, customer, totalCents } satisfies OrderPlaced,
        dedupKey: `order-placed:${order.id}`,
      })
      console.log(`[shop]  order ${order.id} written with message ${id}`)
      if (card === 'declined') throw new Error('card declined')
      return order
    })
    console.log(`[shop]  order ${order.id} committed`)
    return order.id
  } catch (err) {
    console.log(
      `[shop]  order for ${customer} rolled back (${(err as Error).message}): no order row, no message`,
    )
    return null
  }
}

/** 4. A batch: each order in a nested $transaction (a savepoint, Prisma 7.5+), so a bad one drops only itself. */
async function placeBatch(orders: { customer: string; totalCents: number }[]): Promise<string[]> {
  return prisma.$transaction(async (tx) => {
    const placed: string[] = []
    for (const { customer, totalCents } of orders) {
      try {
        const id = await tx.$transaction(async (sp) => {
          const order = await sp.order.create({ data: { customer, totalCents } })
          await publish(outbox, sp, {
            topic: 'order.placed',
            key: order.id,
            payload: { orderId: order.id, customer, totalCents },
          })
          if (totalCents <= 0) throw new Error('total must be positive')
          return order.id
        })
        placed.push(id)
      } catch (err) {
        console.log(`[shop]  batch: order for ${customer} skipped (${(err as Error).message})`)
      }
    }
    console.log(`[shop]  batch committed: ${placed.length} of ${orders.length} orders`)
    return placed
  })
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
        console.log(`[relay] ship order ${order.orderId} to ${order.customer} (attempt ${message.attempts})`)
        delivered.push(message)
      },
    },
  })
  relay.on('error', ({ error, during }) => console.error(`[relay] ${during} failed:`, error))
  await relay.start()

  const committed: string[] = []
  try {
    for (const id of [
      await placeOrder('ada', 2_500, 'ok'),
      await placeOrder('grace', 4_000, 'declined'),
      ...(await placeBatch([
        { customer: 'alan', totalCents: 1_200 },
        { customer: 'edsger', totalCents: 0 },
        { customer: 'barbara', totalCents: 800 },
      ])),
    ]) {
      if (id) committed.push(id)
    }

    // Wait (bounded) until the relay has handled every committed order.
    const deadline = Date.now() + 10_000
    while (delivered.length < committed.length) {
      if (Date.now() > deadline)
        throw new Error(`timed out: ${delivered.length} of ${committed.length} messages delivered`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  } finally {
    await relay.stop({ graceMs: 5_000 })
  }

  const shipped = delivered.map((m) => (m.payload as OrderPlaced).orderId).sort()
  console.log(`[shop]  orders committed: ${committed.length}, orders shipped: ${shipped.length}`)
  if (shipped.join() !== [...committed].sort().join())
    throw new Error('shipped orders differ from committed orders')
  for (const id of committed)
    if (!(await prisma.order.findUnique({ where: { id } }))) throw new Error(`order ${id} missing`)
  console.log('[shop]  every committed order was shipped exactly once; rolled-back ones never were')
}

try {
  await main()
} catch (err) {
  console.error(err)
  process.exitCode = 1
} finally {
  await prisma.$executeRawUnsafe(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`).catch(() => {})
  await prisma.$disconnect()
}
