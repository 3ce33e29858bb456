/**
 * An order service on TypeORM with outboxkit.
 *
 * Each order row and its `order.created` message are written in ONE TypeORM transaction, so they
 * commit or roll back together. A relay then delivers every committed message to its handler.
 *
 * Needs PostgreSQL: DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test. The run uses
 * tables of its own (dropped at the end), so reruns never collide.
 *
 *   npx tsx examples/typeorm/src/main.ts
 */
import { createRelay, type DeliveredMessage, defineOutbox, isOutboxError, type Relay } from '@outboxkit/core'
import { pgBackend } from '@outboxkit/pg'
import { createOutboxEntity, createOutboxMigration, publish, publishMany } from '@outboxkit/typeorm'
import {
  DataSource,
  type EntityManager,
  EntitySchema,
  type MigrationInterface,
  type QueryRunner,
} from 'typeorm'

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const suffix = `_typeorm_example_${process.pid}`

// 1. The outbox, its TypeORM entity (to read rows) and its migration (to create the table).
const outbox = defineOutbox({ table: `outbox${suffix}` })
const OutboxMessage = createOutboxEntity(outbox)
const CreateOutbox = createOutboxMigration(outbox, { timestamp: 1767225600000 })

// 2. The app's own entity, as an EntitySchema: no decorators, no experimentalDecorators.
interface Order {
  id: string
  item: string
  cents: number
}
const Order = new EntitySchema<Order>({
  name: 'Order',
  tableName: `orders${suffix}`,
  columns: {
    id: { type: 'text', primary: true },
    item: { type: 'text' },
    cents: { type: 'integer' },
  },
})

class CreateOrders1767225600001 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "orders${suffix}" (id text PRIMARY KEY, item text NOT NULL, cents integer NOT NULL)`,
    )
  }
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "orders${suffix}"`)
  }
}

const dataSource = new DataSource({
  type: 'postgres',
  url,
  entities: [Order, OutboxMessage],
  migrations: [CreateOutbox, CreateOrders1767225600001],
  migrationsTableName: `migrations${suffix}`,
})

const orderCreated = (order: Order) => ({
  topic: 'order.created',
  key: order.id,
  payload: { orderId: order.id, item: order.item, cents: order.cents },
  dedupKey: `order-created:${order.id}`, // publishing it twice would be a no-op
})

/** The order and its message in one transaction: a declined card rolls back both. */
async function placeOrder(order: Order, card: 'ok' | 'declined'): Promise<void> {
  await dataSource.transaction(async (manager: EntityManager) => {
    await manager.insert(Order, order)
    await publish(outbox, manager, orderCreated(order)) // on the transaction's manager: joins it
    if (card === 'declined') throw new Error('card declined')
  })
}

/** A batch on an explicit QueryRunner, each order in a savepoint: a bad one is skipped, not fatal. */
async function importOrders(orders: Order[]): Promise<void> {
  const queryRunner = dataSource.createQueryRunner()
  try {
    await queryRunner.startTransaction()
    for (const order of orders) {
      await queryRunner.startTransaction() // nested: SAVEPOINT
      try {
        if (order.cents <= 0) throw new Error(`order ${order.id} has no amount`)
        await queryRunner.manager.insert(Order, order)
        await publishMany(outbox, queryRunner, [orderCreated(order)])
        await queryRunner.commitTransaction() // RELEASE SAVEPOINT
      } catch (error) {
        await queryRunner.rollbackTransaction() // ROLLBACK TO SAVEPOINT: its row and message go
        console.log(`  import skipped ${order.id}: ${(error as Error).message}`)
      }
    }
    await queryRunner.commitTransaction()
  } catch (error) {
    if (queryRunner.isTransactionActive) await queryRunner.rollbackTransaction()
    throw error
  } finally {
    await queryRunner.release()
  }
}

/** Resolves once the relay has delivered `count` messages. */
function delivered(relay: Relay, count: number, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = 0
    const timer = setTimeout(
      () => reject(new Error(`only ${seen} of ${count} messages delivered`)),
      timeoutMs,
    )
    relay.on('delivered', () => {
      if (++seen < count) return
      clearTimeout(timer)
      resolve()
    })
  })
}

async function main(): Promise<void> {
  await dataSource.initialize()
  try {
    // 3. Create the tables with TypeORM's migrations (the outbox migration runs core's DDL).
    const ran = await dataSource.runMigrations()
    console.log(`Migrations run: ${ran.map((m) => m.name).join(', ')}`)

    // 4. Orders: each row and its message share one transaction.
    await placeOrder({ id: 'A-1', item: 'teapot', cents: 2_500 }, 'ok')
    console.log('Order A-1 committed, and its message with it.')
    await placeOrder({ id: 'B-2', item: 'kettle', cents: 4_000 }, 'declined').catch((error: Error) =>
      console.log(`Order B-2 rolled back (${error.message}): its message is gone too.`),
    )
    console.log('Importing C-3, D-4 (invalid) and E-5 on a QueryRunner:')
    await importOrders([
      { id: 'C-3', item: 'mug', cents: 900 },
      { id: 'D-4', item: 'saucer', cents: 0 },
      { id: 'E-5', item: 'spoon', cents: 300 },
    ])

    // 5. Outside a transaction, publish refuses and writes nothing: the message would commit alone.
    try {
      await publish(outbox, dataSource.manager, orderCreated({ id: 'X-0', item: 'nothing', cents: 1 }))
    } catch (error) {
      if (!isOutboxError(error, 'NOT_IN_TRANSACTION')) throw error
      console.log(`Refused as expected: ${error.message.slice(0, 110)}...`)
    }

    // 6. The entity reads the outbox like any table.
    const pending = await dataSource
      .getRepository(OutboxMessage)
      .find({ where: { state: 'pending' }, order: { id: 'ASC' } })
    console.log(`Pending messages: ${pending.map((m) => m.key).join(', ')}`)

    // 7. The relay delivers them, outside any transaction, and deletes each row once its handler succeeded.
    const relay = createRelay(outbox, {
      backend: pgBackend({ connectionString: url, commandTimeoutMs: 5_000 }), // owned: closed by relay.stop()
      handlers: {
        'order.created': async (message: DeliveredMessage) => {
          const { orderId, item } = message.payload as { orderId: string; item: string }
          console.log(`  shipping a ${item} for order ${orderId} (attempt ${message.attempts})`)
        },
      },
      pollIntervalMs: 200,
    })
    relay.on('error', ({ error, during }) => console.error(`relay error during ${during}:`, error))
    const allDelivered = delivered(relay, pending.length)
    await relay.start()
    await allDelivered
    await relay.stop({ graceMs: 5_000 })
    const left = await dataSource.getRepository(OutboxMessage).count()
    const orders = await dataSource.getRepository(Order).find({ order: { id: 'ASC' } })
    console.log(`Relay stopped. Orders: ${orders.map((o) => o.id).join(', ')}; outbox rows left: ${left}.`)
  } finally {
    // 8. Clean up this run's tables: each migration's down() (a no-op once none is left), then
    // TypeORM's migrations table, then close TypeORM's pool.
    for (const _ of dataSource.migrations) await dataSource.undoLastMigration()
    await dataSource.query(`DROP TABLE IF EXISTS "migrations${suffix}"`)
    await dataSource.destroy()
  }
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
