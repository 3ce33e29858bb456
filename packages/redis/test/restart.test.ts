// A redis-server of this file's own (a free port, AOF with appendfsync always in a temporary
// directory, so a restart keeps every acknowledged entry) is SIGKILLed mid-drain and started
// again on the same port: the relay heals without a restart (node-redis reconnects by itself),
// retries with backoff rather than a hot loop (its attempts are counted), and every committed
// message ends in the stream at least once (the repeats are counted: Redis 7 has no dedup).
import {
  countedHandler,
  createPgOutbox,
  killServerMidDrain,
  type PgOutbox,
  RESTART_RELAY_OPTIONS,
  type ServerProcess,
  startServerProcess,
  waitFor,
} from '@outboxkit/conformance'
import { createRelay, type Relay } from '@outboxkit/core'
import { redisStreamForwarder } from '@outboxkit/redis'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { connectRedis, type RedisReader, streamEntries, uniqueKey } from './support/redis-streams.js'

const stream = uniqueKey('restart')
let server: ServerProcess
const clients: RedisReader[] = []
let db: PgOutbox | undefined
let relay: Relay | undefined
beforeAll(async () => {
  server = await startServerProcess('redis-server', (port, dir) => [
    '--port',
    `${port}`,
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
  ])
})
afterAll(async () => {
  await relay?.stop()
  for (const client of clients) client.destroy()
  await db?.drop()
  await server?.remove()
})

/** A client of the file's server, on node-redis's default reconnect strategy. */
async function connectOwn(): Promise<RedisReader> {
  const client = await connectRedis({ url: `redis://127.0.0.1:${server.port}` })
  clients.push(client)
  return client
}

test('the server SIGKILLed and restarted mid-drain: the relay heals with backoff, every message in the stream', async () => {
  const reader = await connectOwn()
  db = await createPgOutbox('redis_restart')
  const items = Array.from({ length: 400 }, (_, i) => ({ key: null, payload: { i } }))
  const committed = await db.commit('order.shipped', items)
  const { handler, counts: stats } = countedHandler(
    redisStreamForwarder(await connectOwn(), { stream, timeoutMs: 1_000 }),
    5,
  )
  relay = createRelay(db.outbox, {
    backend: db.backend,
    // A little work per message and few at a time, so the kill lands in the middle of the drain.
    handlers: { 'order.shipped': handler },
    ...RESTART_RELAY_OPTIONS,
  })
  const { deliveredAtKill, callsWhileDown, downMs } = await killServerMidDrain(relay, server, stats)
  await waitFor(() => stats.delivered >= committed.length || undefined, {
    timeoutMs: 60_000,
    what: 'the relay done',
  })
  const ids = (await streamEntries(reader, stream)).map((e) => String(e.fields.id))
  const worst = Math.max(0, ...stats.failuresOf.values())
  console.info(
    `[redis restart] ${committed.length} committed, ${deliveredAtKill} delivered at the kill, down ${downMs} ms, ${stats.failures} failed attempts (worst message ${worst}), ${stats.calls} calls, ${ids.length} entries (${ids.length - new Set(ids).size} repeats)`,
  )
  expect(deliveredAtKill, 'the kill landed mid-drain').toBeLessThan(committed.length)
  expect(stats.failures, 'the outage was seen').toBeGreaterThan(0)
  // Backoff: 200 ms doubling (each attempt also waits up to the 1 s timeout) over ~3 s down is a
  // handful of attempts per message; a hot loop would be hundreds.
  expect(worst).toBeLessThanOrEqual(8)
  expect(callsWhileDown - deliveredAtKill).toBeLessThan(4 * 10)
  expect(new Set(ids)).toEqual(new Set(committed.map((c) => c.id)))
}, 120_000)
