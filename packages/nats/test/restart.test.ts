// A nats-server of this file's own (JetStream, file storage in a temporary directory, a free
// port) is SIGKILLed mid-drain and started again on the same port and store: the relay heals
// without a restart (the client reconnects by itself), retries with backoff rather than a hot
// loop (its attempts are counted), and every committed message ends in the stream exactly once.
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
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
import { jetStreamForwarder } from '@outboxkit/nats'
import { afterAll, beforeAll, expect, test } from 'vitest'

const NATS_SERVER = '/usr/sbin/nats-server'
const STREAM = `outboxkit_restart_${process.pid}`
const SUBJECT = `ok.${process.pid}.restart.orders`
let server: ServerProcess
const connections: NatsConnection[] = []
let db: PgOutbox | undefined
let relay: Relay | undefined
beforeAll(async () => {
  server = await startServerProcess(NATS_SERVER, (port, dir) => [
    '-js',
    '-sd',
    dir,
    '-a',
    '127.0.0.1',
    '-p',
    `${port}`,
  ])
})
afterAll(async () => {
  await relay?.stop()
  for (const nc of connections) await nc.close().catch(() => {})
  await db?.drop()
  await server?.remove()
})

/** A connection to the file's server that reconnects every 100 ms, without a limit. */
async function connectOwn(): Promise<NatsConnection> {
  const nc = await connect({
    servers: `127.0.0.1:${server.port}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
  })
  connections.push(nc)
  return nc
}

test('the server SIGKILLed and restarted mid-drain: the relay heals with backoff, every message stored once', async () => {
  const reader = await connectOwn()
  const jsm = await jetstreamManager(reader)
  await jsm.streams.add({ name: STREAM, subjects: [SUBJECT], duplicate_window: 120_000_000_000 })
  db = await createPgOutbox('nats_restart')
  const items = Array.from({ length: 400 }, (_, i) => ({ key: null, payload: { i } }))
  const committed = await db.commit('order.created', items)
  const js = jetstream(await connectOwn())
  const { handler, counts: stats } = countedHandler(
    jetStreamForwarder(js, { subject: SUBJECT, timeoutMs: 1_000 }),
    5,
  )
  relay = createRelay(db.outbox, {
    backend: db.backend,
    // A little work per message and few at a time, so the kill lands in the middle of the drain.
    handlers: { 'order.created': handler },
    ...RESTART_RELAY_OPTIONS,
  })
  const { deliveredAtKill, callsWhileDown, downMs } = await killServerMidDrain(relay, server, stats)
  // The reader reconnects too, and JetStream recovers its store first: a request may time out.
  const inStream = async () => (await jsm.streams.info(STREAM).catch(() => null))?.state.messages ?? 0
  await waitFor(async () => (await inStream()) >= committed.length || undefined, {
    timeoutMs: 60_000,
    what: 'every committed message in the stream',
  })
  await waitFor(() => stats.delivered >= committed.length || undefined, {
    timeoutMs: 30_000,
    what: 'the relay done',
  })
  const worst = Math.max(0, ...stats.failuresOf.values())
  console.info(
    `[nats restart] ${committed.length} committed, ${deliveredAtKill} delivered at the kill, down ${downMs} ms, ${stats.failures} failed attempts (worst message ${worst}), ${stats.calls} calls`,
  )
  expect(deliveredAtKill, 'the kill landed mid-drain').toBeLessThan(committed.length)
  expect(stats.failures, 'the outage was seen').toBeGreaterThan(0)
  // Backoff: 200 ms doubling (each attempt also waits up to the 1 s PubAck timeout) over ~3 s
  // down is a handful of attempts per message; a hot loop would be hundreds.
  expect(worst).toBeLessThanOrEqual(8)
  expect(callsWhileDown - deliveredAtKill).toBeLessThan(4 * 10)
  const stored = await jsm.streams.info(STREAM)
  expect(stored.state.messages, 'exactly once: the retried publishes were duplicate acks').toBe(
    committed.length,
  )
  const ids = new Set<string>()
  for (let seq = stored.state.first_seq; seq <= stored.state.last_seq; seq++)
    ids.add((await jsm.streams.getMessage(STREAM, { seq }))!.header.get('Nats-Msg-Id'))
  expect(ids).toEqual(new Set(committed.map((c) => c.id)))
}, 120_000)
