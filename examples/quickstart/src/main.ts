/**
 * outboxkit in one file.
 *
 * Each order is written together with its `order.created` message in ONE transaction, so the
 * two commit or roll back together (no dual write). A relay then hands every committed message
 * to its handler, retries failures with backoff, and dead-letters what can never succeed.
 *
 * Runs on embedded PGlite, no server needed. Set DATABASE_URL to run it on your PostgreSQL.
 */
import { PGlite } from '@electric-sql/pglite'
import {
  Cancel,
  createRelay,
  defineOutbox,
  migrate,
  type OutboxBackend,
  type PublishMessage,
  type Relay,
} from '@outboxkit/core'
import * as outboxPg from '@outboxkit/pg'
import * as outboxPglite from '@outboxkit/pglite'
import pg from 'pg'

// On a shared server this run gets tables of its own (dropped at the end), so reruns never collide.
const suffix = process.env.DATABASE_URL ? `_quickstart_${process.pid}` : ''
const ORDERS = `orders${suffix}`

// 1. Define the outbox once; producers and the relay share this object.
const outbox = defineOutbox({ table: `outbox${suffix}` })
const OUTBOX = outbox.table.display

interface Order {
  id: string
  item: string
  card: 'ok' | 'declined'
}

/** The message that goes out with an order. */
function orderCreated(order: Order): PublishMessage<typeof outbox> {
  return {
    topic: 'order.created',
    key: order.id,
    payload: { orderId: order.id, item: order.item },
    dedupKey: `order-created:${order.id}`, // publishing it twice would be a no-op
  }
}

/** A business rule checked inside the transaction, after the writes: a declined card aborts it all. */
function chargeCard(order: Order): void {
  if (order.card === 'declined') throw new Error('card declined')
}

/** What the story needs from a database. The two implementations below show each driver's own API. */
interface Database {
  readonly label: string
  readonly backend: OutboxBackend
  /** Inserts the order and publishes its message in one transaction: both commit, or neither does. */
  placeOrder(order: Order): Promise<void>
  /** One statement outside any transaction (setup and inspection). */
  query<T>(text: string, params?: unknown[]): Promise<T[]>
  close(): Promise<void>
}

async function openPglite(): Promise<Database> {
  const db = await PGlite.create() // in memory: gone when the process exits
  return {
    label: 'embedded PGlite (in memory)',
    backend: outboxPglite.pgliteBackend(db),
    async placeOrder(order) {
      // PGlite commits when the callback resolves and rolls back when it throws.
      await db.transaction(async (tx) => {
        await tx.query(`INSERT INTO ${ORDERS} (id, item) VALUES ($1, $2)`, [order.id, order.item])
        await outboxPglite.publish(outbox, tx, orderCreated(order)) // on tx: joins this transaction
        chargeCard(order)
      })
    },
    query: async <T>(text: string, params?: unknown[]) => (await db.query<T>(text, params)).rows,
    close: () => db.close(),
  }
}

function openPostgres(url: string): Database {
  const pool = new pg.Pool({ connectionString: url })
  const { host, pathname } = new URL(url)
  return {
    label: `PostgreSQL at ${host}${pathname}`,
    // Built on your pool, the backend never closes it: relay.stop() leaves it open.
    backend: outboxPg.pgBackend({ pool, commandTimeoutMs: 5_000 }),
    async placeOrder(order) {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        await client.query(`INSERT INTO ${ORDERS} (id, item) VALUES ($1, $2)`, [order.id, order.item])
        await outboxPg.publish(outbox, client, orderCreated(order)) // on the client inside BEGIN
        chargeCard(order)
        await client.query('COMMIT')
      } catch (error) {
        await client.query('ROLLBACK')
        throw error
      } finally {
        client.release()
      }
    },
    query: async <T>(text: string, params?: unknown[]) => (await pool.query(text, params)).rows as T[],
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${ORDERS}, ${OUTBOX}`)
      await pool.end()
    },
  }
}

// A fake warehouse API that is down for its first call, so one delivery fails and is retried.
let warehouseCalls = 0
async function callWarehouse(orderId: string, item: string): Promise<void> {
  warehouseCalls++
  if (warehouseCalls === 1) throw new Error('warehouse API timed out')
  console.log(`    warehouse: shipping a ${item} for order ${orderId}`)
}

/** Resolves once the relay has settled `count` messages (delivered or dead-lettered). */
function settled(relay: Relay, count: number, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = 0
    const timer = setTimeout(() => reject(new Error(`only ${seen} of ${count} messages settled`)), timeoutMs)
    const done = () => {
      if (++seen < count) return
      clearTimeout(timer)
      resolve()
    }
    relay.on('delivered', done)
    relay.on('deadLettered', done)
  })
}

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL
  const db = url ? openPostgres(url) : await openPglite()
  console.log(`Running on ${db.label}.\n`)
  try {
    // 2. Create the outbox table and its indexes (safe to run again), and the app's own table.
    await migrate(outbox, db.backend)
    await db.query(`CREATE TABLE ${ORDERS} (id text PRIMARY KEY, item text NOT NULL)`)

    // 3. Place three orders. Each INSERT and its publish share one transaction.
    const orders: Order[] = [
      { id: 'A-1', item: 'teapot', card: 'ok' },
      { id: 'B-2', item: 'kettle', card: 'declined' },
      { id: 'C-3', item: 'discontinued lamp', card: 'ok' },
    ]
    for (const order of orders) {
      try {
        await db.placeOrder(order)
        console.log(`Order ${order.id} committed, and its message with it.`)
      } catch (error) {
        console.log(`Order ${order.id} rolled back (${(error as Error).message}): its message is gone too.`)
      }
    }
    const pending = await db.query<{ key: string }>(`SELECT key FROM ${OUTBOX} ORDER BY id`)
    console.log(
      `The outbox holds ${pending.length} messages, for ${pending.map((r) => r.key).join(' and ')}.\n`,
    )

    // 4. The relay: claims due messages, runs their handler outside any transaction, settles the result.
    const relay = createRelay(outbox, {
      backend: db.backend,
      handlers: {
        'order.created': async (message) => {
          const { orderId, item } = message.payload as { orderId: string; item: string }
          // Cancel: retrying cannot help, so dead-letter now. (Any other error is retried with
          // backoff, and dead-lettered once it has failed maxAttempts times.)
          if (item === 'discontinued lamp') throw new Cancel(`${item} is no longer sold`)
          await callWarehouse(orderId, item)
        },
      },
      maxAttempts: 3,
      retry: { baseMs: 100 }, // first retry within 100 ms, to keep the demo quick (default 1 s)
      keepDelivered: true, // keep delivered rows to show them below (the default deletes them)
    })
    relay.on('delivered', ({ message }) =>
      console.log(`Delivered ${message.topic} for ${message.key} on attempt ${message.attempts}.`),
    )
    relay.on('retried', ({ message, error, delayMs }) =>
      console.log(
        `Attempt ${message.attempts} for ${message.key} failed (${(error as Error).message}): retrying in ${delayMs} ms.`,
      ),
    )
    relay.on('deadLettered', ({ message, id, topic, reason, error }) =>
      console.log(`Dead-lettered ${topic} for ${message?.key ?? id} (${reason}): ${error}.`),
    )
    relay.on('error', ({ error, during }) => console.error(`Relay error during ${during}:`, error))

    const allSettled = settled(relay, 2) // A-1 delivered and C-3 dead-lettered; B-2 never existed
    await relay.start() // resolves once running; delivery goes on in the background
    console.log('Relay started.')
    await allSettled
    await relay.stop() // drains running handlers, then releases the backend's own connections
    console.log('Relay stopped.')

    // 5. What is left in the tables.
    console.log('\nFinal state:')
    const ids = await db.query<{ id: string }>(`SELECT id FROM ${ORDERS} ORDER BY id`)
    console.log(`  ${ORDERS}: ${ids.map((r) => r.id).join(', ')} (B-2 rolled back, so it was never relayed)`)
    const rows = await db.query<{ key: string; state: string; attempts: number; last_error: string | null }>(
      `SELECT key, state, attempts, last_error FROM ${OUTBOX} ORDER BY id`,
    )
    for (const r of rows) {
      console.log(
        `  ${OUTBOX}: ${r.key} state=${r.state} attempts=${r.attempts} last_error=${r.last_error ?? '-'}`,
      )
    }
  } finally {
    await db.close()
  }
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
