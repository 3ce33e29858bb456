// A relay on PostgreSQL forwarding into Redis through a proxy this file owns: every committed
// message ends in the stream although the path is cut and frozen mid-run (at least once), and a
// message Redis refuses dead-letters with Redis's reason without blocking the others.
import {
  nextEvent,
  type PausableProxy,
  testDatabaseUrl,
  uniqueTableName,
  waitFor,
} from '@outboxkit/conformance'
import { createRelay, defineOutbox, type Handler, isOutboxError, listDead, migrate } from '@outboxkit/core'
import { pgBackend, publish } from '@outboxkit/pg'
import { redisStreamForwarder } from '@outboxkit/redis'
import pg from 'pg'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { type ProxiedRedis, proxiedRedis } from './support/proxied-redis.js'
import { type RedisReader, receivedFrom, uniqueKey, wrongTypeKey } from './support/redis-streams.js'

const stream = uniqueKey('relay')
let notAStream: string
let path: ProxiedRedis
let proxy: PausableProxy
let direct: RedisReader
let proxied: RedisReader
let pool: pg.Pool
beforeAll(async () => {
  path = await proxiedRedis(100)
  ;({ proxy, direct, proxied } = path)
  notAStream = await wrongTypeKey(direct, 'relay-string')
  pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 })
})
afterAll(async () => {
  await direct?.del([stream, notAStream])
  await path?.close()
  await pool?.end()
})

/** A fresh outbox table with `count` committed messages; returns their ids in commit order. */
async function committedMessages(table: string, count: number, payload: (i: number) => object) {
  const outbox = defineOutbox({ table })
  await migrate(outbox, pgBackend({ pool }))
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      ids.push(
        (await publish(outbox, client, { topic: 'order.shipped', key: `k${i % 4}`, payload: payload(i) })).id,
      )
      await client.query('COMMIT')
    } finally {
      client.release()
    }
  }
  return { outbox, ids }
}

test('every committed message ends in the stream while the path is cut, then frozen, mid-run', async () => {
  const table = uniqueTableName('redis_relay')
  try {
    const { outbox, ids } = await committedMessages(table, 150, (i) => ({ i }))
    const backend = pgBackend({ pool })
    const forward = redisStreamForwarder(proxied, { stream, timeoutMs: 300 })
    // The faults strike mid-run, at the 30th and the 80th distinct message the relay hands over.
    const seen = new Set<string>()
    let cut = false
    let frozen = false
    const handler: Handler = (message, context) => {
      seen.add(message.id)
      if (seen.size === 30 && !cut) {
        cut = true
        proxy.cut({ refuse: true })
      }
      if (seen.size === 80 && !frozen) {
        frozen = true
        proxy.pause()
      }
      return forward(message, context)
    }
    const relay = createRelay(outbox, {
      backend,
      handlers: { 'order.shipped': handler },
      batchSize: 10,
      pollIntervalMs: 50,
      maxAttempts: 1_000,
      retry: { baseMs: 20, maxMs: 200 },
    })
    // Cut: BROKER for an XADD in flight, TIMEOUT for one queued offline. Frozen: TIMEOUT.
    const cutFailure = nextEvent(relay, 'retried', {
      timeoutMs: 30_000,
      where: (e) => cut && (isOutboxError(e.error, 'BROKER') || isOutboxError(e.error, 'TIMEOUT')),
    })
    const frozenFailure = nextEvent(relay, 'retried', {
      timeoutMs: 30_000,
      where: (e) => proxy.paused && isOutboxError(e.error, 'TIMEOUT'),
    })
    await relay.start()
    try {
      await cutFailure
      proxy.heal()
      await frozenFailure
      proxy.resume()
      const received = await waitFor(
        async () => {
          const r = await receivedFrom(direct, stream)
          return new Set(r.map((x) => x.id)).size >= ids.length ? r : undefined
        },
        { timeoutMs: 60_000, what: `${ids.length} messages in the stream` },
      )
      expect(new Set(received.map((r) => r.id))).toEqual(new Set(ids))
    } finally {
      await relay.stop()
    }
  } finally {
    await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {})
    await direct.del(stream)
  }
})

test('a message Redis refuses (WRONGTYPE) dead-letters with Redis’s reason and does not block the others', async () => {
  const table = uniqueTableName('redis_dead')
  try {
    const { outbox, ids } = await committedMessages(table, 8, (i) => ({ i, bad: i === 2 }))
    const backend = pgBackend({ pool })
    const forward = redisStreamForwarder(direct, {
      stream: (m) => ((m.payload as { bad: boolean }).bad ? notAStream : stream),
      timeoutMs: 2_000,
    })
    const relay = createRelay(outbox, {
      backend,
      handlers: { 'order.shipped': forward },
      pollIntervalMs: 50,
      maxAttempts: 2,
      retry: { baseMs: 10, maxMs: 50 },
    })
    const dead = nextEvent(relay, 'deadLettered', { timeoutMs: 20_000 })
    await relay.start()
    try {
      await dead
      const good = ids.filter((_, i) => i !== 2)
      const received = await waitFor(
        async () => {
          const r = await receivedFrom(direct, stream)
          return r.length >= good.length ? r : undefined
        },
        { timeoutMs: 20_000, what: `${good.length} messages in the stream` },
      )
      expect(received.map((r) => r.id).sort()).toEqual([...good].sort())
      const [letter, ...others] = await listDead(outbox, backend)
      expect(others).toEqual([])
      expect(letter!.id).toBe(ids[2])
      expect(letter!.attempts).toBe(2)
      expect(letter!.lastError).toContain('WRONGTYPE')
      expect(letter!.lastError).toContain(notAStream)
    } finally {
      await relay.stop()
    }
  } finally {
    await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {})
    await direct.del(stream)
  }
})
