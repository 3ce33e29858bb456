import { serverInspector, testDatabaseUrl, uniqueTableName, useOutboxTable } from '@outboxkit/conformance'
import { defineOutbox, isOutboxError } from '@outboxkit/core'
import { type DrizzleTransaction, publish, publishMany } from '@outboxkit/drizzle'
import { pgBackend } from '@outboxkit/pg'
import { sql, TransactionRollbackError } from 'drizzle-orm'
import { drizzle as nodePgDrizzle } from 'drizzle-orm/node-postgres'
import { drizzle as postgresJsDrizzle } from 'drizzle-orm/postgres-js'
import pg from 'pg'
import postgres from 'postgres'
import { afterAll, describe, expect, test } from 'vitest'

const url = testDatabaseUrl()
const inspector = serverInspector()
const pool = new pg.Pool({ connectionString: url, max: 6 })
const pjs = postgres(url, { max: 4, onnotice: () => {} })
const drivers = [
  ['node-postgres', nodePgDrizzle({ client: pool })],
  ['postgres-js', postgresJsDrizzle({ client: pjs })],
] as const
type Db = (typeof drivers)[0][1]
const outbox = useOutboxTable('drizzle_errors', { backend: () => pgBackend({ pool }) })
const table = outbox.table.name

const count = async (where: string) =>
  Number((await inspector.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`))[0]!.n)

afterAll(async () => {
  await inspector.close()
  await pool.end()
  await pjs.end()
})

describe.each(drivers)('%s', (label, d) => {
  const db = d as Db
  test('statement_timeout surfaces as OutboxError TIMEOUT, and the transaction rolls back', async () => {
    // An uncommitted publish with the same dedupKey makes ours wait on its row lock.
    const holder = new pg.Client({ connectionString: url })
    await holder.connect()
    const dedupKey = `timeout-${label}`
    try {
      await holder.query('BEGIN')
      await holder.query(
        `INSERT INTO ${table} (id, topic, payload, dedup_key) VALUES (gen_random_uuid(), 'holder', '1', $1)`,
        [dedupKey],
      )
      const err = await db
        .transaction(async (tx: DrizzleTransaction) => {
          await tx.execute(sql`SET LOCAL statement_timeout = '200ms'`)
          await publish(outbox, tx, { topic: `timeout-${label}`, payload: 'waiter', dedupKey })
        })
        .catch((e: unknown) => e)
      expect(isOutboxError(err, 'TIMEOUT'), String(err)).toBe(true)
      expect((err as Error).message).toMatch(/^\[outboxkit\] \[drizzle\] publish to .* timed out/)
      expect((err as { cause?: { code?: string } }).cause?.code).toBe('57014')
    } finally {
      await holder.query('ROLLBACK')
      await holder.end()
    }
    expect(await count(`topic = 'timeout-${label}'`)).toBe(0)
  })

  test('a database error is DATABASE, with the driver error as cause and no payload in the message', async () => {
    const missing = defineOutbox({ table: uniqueTableName('drizzle_missing') })
    const secret = 'payload-that-must-not-be-in-messages'
    const err = await db
      .transaction((tx: DrizzleTransaction) =>
        publishMany(missing, tx, [{ topic: 't', payload: { secret } }]),
      )
      .catch((e: unknown) => e)
    expect(isOutboxError(err, 'DATABASE'), String(err)).toBe(true)
    expect((err as Error).message).toMatch(
      /^\[outboxkit\] \[drizzle\] publish to ok_drizzle_missing_\S+ failed: relation .* does not exist/,
    )
    expect((err as Error).message).not.toContain(secret)
    expect((err as Error).message).not.toContain('Failed query')
    expect((err as { cause?: { code?: string } }).cause?.code).toBe('42P01')
  })
})

test("node-postgres: pg's query_timeout surfaces as TIMEOUT too", async () => {
  const timed = new pg.Pool({ connectionString: url, max: 1, query_timeout: 300 })
  const holder = new pg.Client({ connectionString: url })
  await holder.connect()
  try {
    await holder.query('BEGIN')
    await holder.query(
      `INSERT INTO ${table} (id, topic, payload, dedup_key) VALUES (gen_random_uuid(), 'holder', '1', 'qt')`,
    )
    await nodePgDrizzle({ client: timed })
      .transaction(async (tx) => {
        const err = await publish(outbox, tx, { topic: 'query-timeout', payload: 1, dedupKey: 'qt' }).catch(
          (e: unknown) => e,
        )
        expect(isOutboxError(err, 'TIMEOUT'), String(err)).toBe(true)
        expect((err as Error).message).toMatch(/timed out \(Query read timeout\)/)
        // The statement still waits on the server: free it, so Drizzle's ROLLBACK can run in time.
        await holder.query('ROLLBACK')
        tx.rollback()
      })
      .catch((e: unknown) => {
        if (!(e instanceof TransactionRollbackError)) throw e
      })
  } finally {
    await holder.query('ROLLBACK')
    await holder.end()
    await timed.end()
  }
  expect(await count(`topic = 'query-timeout'`)).toBe(0)
})
