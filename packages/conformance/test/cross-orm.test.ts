// One outbox table, six PostgreSQL adapters publishing into it in one run, and one relay that
// delivers them all: first on pgBackend, then on postgresJsBackend. The promise of the project:
// a user passes whatever transaction their ORM gives them, and one relay serves every ORM.
import {
  createRelay,
  type DeliveredMessage,
  defineOutbox,
  migrate,
  type OutboxBackend,
} from '@outboxkit/core'
import * as drizzleAdapter from '@outboxkit/drizzle'
import * as kyselyAdapter from '@outboxkit/kysely'
import { pgBackend, publish as pgPublish } from '@outboxkit/pg'
import { postgresJsBackend, publish as postgresJsPublish } from '@outboxkit/postgres-js'
import * as prismaAdapter from '@outboxkit/prisma'
import * as typeormAdapter from '@outboxkit/typeorm'
import { PrismaPg } from '@prisma/adapter-pg'
import { drizzle } from 'drizzle-orm/node-postgres'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import postgres from 'postgres'
import { DataSource } from 'typeorm'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { loadPrismaClient } from '../../prisma/test/support/prisma-client.js'
import { serverInspector, testDatabaseUrl, uniqueTableName, waitFor } from '../src/index.js'

const { PrismaClient } = await loadPrismaClient()
const url = testDatabaseUrl()
const outbox = defineOutbox({ table: uniqueTableName('cross_orm') })
const inspector = serverInspector()
const pool = new pg.Pool({ connectionString: url, max: 6 })
const sql = postgres(url, { max: 4, onnotice: () => {} })
const kysely = new Kysely<Record<string, never>>({
  dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 4 }) }),
})
const db = drizzle({ client: new pg.Pool({ connectionString: url, max: 4 }) })
const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 4 }) })
const dataSource = new DataSource({ type: 'postgres', url, poolSize: 4 })

/** Publishes `n` messages through each of the six adapters, each inside its library's own transaction. */
async function publishThroughEveryAdapter(round: string, n: number): Promise<Map<string, string>> {
  const ids = new Map<string, string>()
  const msg = (adapter: string, i: number) => ({
    topic: 'cross',
    payload: { adapter, round, i },
    key: `${adapter}-${i}`,
  })
  for (let i = 0; i < n; i++) {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      ids.set((await pgPublish(outbox, client, msg('pg', i))).id, 'pg')
      await client.query('COMMIT')
    } finally {
      client.release()
    }
    await sql.begin(async (tx) =>
      ids.set((await postgresJsPublish(outbox, tx, msg('postgres-js', i))).id, 'postgres-js'),
    )
    await kysely
      .transaction()
      .execute(async (trx) =>
        ids.set((await kyselyAdapter.publish(outbox, trx, msg('kysely', i))).id, 'kysely'),
      )
    await db.transaction(async (tx) =>
      ids.set((await drizzleAdapter.publish(outbox, tx, msg('drizzle', i))).id, 'drizzle'),
    )
    await prisma.$transaction(async (tx) =>
      ids.set((await prismaAdapter.publish(outbox, tx, msg('prisma', i))).id, 'prisma'),
    )
    await dataSource.transaction(async (manager) =>
      ids.set((await typeormAdapter.publish(outbox, manager, msg('typeorm', i))).id, 'typeorm'),
    )
  }
  return ids
}

/** Runs one relay on `backend` until every id in `ids` was delivered; returns the deliveries. */
async function drain(backend: OutboxBackend, ids: Map<string, string>): Promise<DeliveredMessage[]> {
  const delivered: DeliveredMessage[] = []
  const relay = createRelay(outbox, {
    backend,
    pollIntervalMs: 100,
    handlers: { cross: async (m: DeliveredMessage) => void delivered.push(m) },
  })
  await relay.start()
  try {
    await waitFor(() => delivered.length >= ids.size, { what: `${ids.size} deliveries`, timeoutMs: 30_000 })
    await waitFor(
      async () =>
        Number((await inspector.query(`SELECT count(*)::int AS n FROM ${outbox.table.name}`))[0]!.n) === 0,
      {
        what: 'the delivered rows to be deleted',
      },
    )
  } finally {
    await relay.stop()
  }
  return delivered
}

beforeAll(async () => {
  await dataSource.initialize()
  await migrate(outbox, pgBackend({ pool }))
})
afterAll(async () => {
  await inspector.query(`DROP TABLE IF EXISTS ${outbox.table.name}`)
  await Promise.allSettled([
    inspector.close(),
    pool.end(),
    sql.end(),
    kysely.destroy(),
    (db.$client as pg.Pool).end(),
    prisma.$disconnect(),
    dataSource.destroy(),
  ])
})

describe('one relay delivers what six ORMs published into one outbox', () => {
  for (const [label, backend] of [
    ['pgBackend', () => pgBackend({ connectionString: url })],
    ['postgresJsBackend', () => postgresJsBackend({ url })],
  ] as const) {
    test(`relay on ${label}`, async () => {
      const ids = await publishThroughEveryAdapter(label, 3)
      expect(ids.size).toBe(18)
      expect(new Set(ids.values())).toEqual(
        new Set(['pg', 'postgres-js', 'kysely', 'drizzle', 'prisma', 'typeorm']),
      )
      const delivered = await drain(backend(), ids)
      expect(delivered.map((d) => d.id).sort()).toEqual([...ids.keys()].sort())
      for (const d of delivered) {
        const payload = d.payload as { adapter: string; round: string }
        expect(payload.adapter).toBe(ids.get(d.id))
        expect(payload.round).toBe(label)
        expect(d.key).toBe(`${payload.adapter}-${(payload as unknown as { i: number }).i}`)
        expect(d.attempts).toBe(1)
      }
    })
  }
})
