// Scenario 4: the database freezes (a TCP proxy stops moving bytes). Publish and the relay's
// statements fail within their bound with OutboxError('TIMEOUT'); nothing hangs; once the network
// is back the relay carries on by itself and delivers.
import { failure, testDatabaseUrl, usePausableProxy, waitFor } from '@outboxkit/conformance'
import { isOutboxError, type OutboxError, type Relay, type RelayEvents } from '@outboxkit/core'
import { pgBackend, publish, publishMany } from '@outboxkit/pg'
import pg from 'pg'
import { afterAll, afterEach, expect, test } from 'vitest'
import { figuresLine } from '../src/report.js'
import { deferred, messages, nextEvent, World } from './support/world.js'

const w = new World()
afterEach(() => w.cleanup())
afterAll(() => w.close())
// Registered after the world's hooks: resumed before the world stops what runs through it.
const proxy = usePausableProxy(testDatabaseUrl(), 5432)
const BOUND_MS = 1_000
// The bound plus generous slack for this shared, loaded machine.
const SLACK_MS = 6_000

test('publish through a frozen network fails with TIMEOUT within query_timeout; the transaction rolls back, nothing written', async () => {
  const outbox = await w.outbox('frozen_publish')
  const client = new pg.Client({ connectionString: proxy.url, query_timeout: BOUND_MS })
  client.on('error', () => {})
  await client.connect()
  const timings: number[] = []
  try {
    for (const call of [
      () => publish(outbox, client, { topic: 't', payload: { one: true } }),
      () => publishMany(outbox, client, messages(3)),
    ]) {
      await client.query('BEGIN')
      proxy.pause()
      const { error, ms } = await failure(call)
      timings.push(ms)
      expect(isOutboxError(error, 'TIMEOUT')).toBe(true)
      expect((error as OutboxError).source).toBe('pg')
      expect((error as OutboxError).message).toMatch(/^\[outboxkit\] \[pg\] .*timed out/)
      expect(ms).toBeGreaterThanOrEqual(BOUND_MS - 50)
      expect(ms).toBeLessThan(BOUND_MS + SLACK_MS)
      proxy.resume()
      await client.query('ROLLBACK') // the business transaction gives up
    }
  } finally {
    await client.end().catch(() => {})
  }
  expect(await w.rows(outbox)).toEqual([])
  console.log(figuresLine('frozen-publish', { boundMs: BOUND_MS, failedAfterMs: timings.join('/') }))
})

test('relay claims through a frozen network fail with TIMEOUT within commandTimeoutMs; resumed, it delivers on its own', async () => {
  const outbox = await w.outbox('frozen_relay')
  const leaseMs = 3_000
  const attempts = new Map<string, number>()
  const relay = w.relay(outbox, {
    backend: w.backend({ connectionString: proxy.url, commandTimeoutMs: BOUND_MS }),
    handlers: { t: (m) => void attempts.set(m.id, m.attempts) },
    pollIntervalMs: 200,
    leaseMs,
    notify: false,
  })
  const firstClaim = nextEvent(relay, 'claimed')
  await relay.start()
  await firstClaim
  const errors: { at: number; error: unknown }[] = []
  relay.on('error', (e) => e.during === 'claim' && errors.push({ at: Date.now(), error: e.error }))
  const pausedAt = Date.now()
  proxy.pause()
  const published = await w.publish(outbox, messages(20)) // straight to the server
  await waitFor(() => errors.length >= 3, { timeoutMs: 60_000, what: 'three claim timeouts' })
  expect(errors.every((e) => isOutboxError(e.error, 'TIMEOUT'))).toBe(true)
  // The first claim after the freeze fails within the poll interval plus the bound.
  expect(errors[0]!.at - pausedAt).toBeLessThan(200 + BOUND_MS + SLACK_MS)
  expect(relay.running).toBe(true)
  expect(attempts.size).toBe(0)
  proxy.resume()
  const resumedAt = Date.now()
  await waitFor(() => attempts.size === 20, { timeoutMs: 60_000, what: 'delivery after the thaw' })
  const deliveredAfterMs = Date.now() - resumedAt
  expect([...attempts.keys()].sort()).toEqual(published.map((p) => p.id).sort())
  await waitFor(async () => (await w.rows(outbox)).length === 0, { what: 'the rows to be settled' })
  // A claim that timed out on the client was still sitting in the network: it ran on the server
  // when the network came back and claimed the rows for nobody. They waited out that lease, and
  // that claim counted as an attempt, so they were delivered at attempt 2.
  expect([...attempts.values()].every((a) => a === 2)).toBe(true)
  expect(deliveredAfterMs).toBeGreaterThanOrEqual(leaseMs - 500)
  console.log(
    figuresLine('frozen-relay', {
      boundMs: BOUND_MS,
      firstErrorAfterMs: errors[0]!.at - pausedAt,
      claimTimeouts: errors.length,
      messages: 20,
      lost: 20 - attempts.size,
      deliveredAfterThawMs: deliveredAfterMs,
      attemptsAtDelivery: [...new Set(attempts.values())].join('/'),
    }),
  )
})

test('a settle that times out during a freeze is retried after it, and the message is delivered', async () => {
  const outbox = await w.outbox('frozen_settle')
  const started = deferred()
  const finish = deferred()
  let calls = 0
  const relay = w.relay(outbox, {
    backend: w.backend({ connectionString: proxy.url, commandTimeoutMs: BOUND_MS }),
    handlers: {
      t: async () => {
        calls++
        started.resolve()
        await finish.promise
      },
    },
    pollIntervalMs: 200,
    leaseMs: 60_000,
    notify: false,
  })
  const settleErrors: RelayEvents['error'][] = []
  relay.on('error', (e) => e.during === 'settle' && settleErrors.push(e))
  const [m] = await w.publish(outbox, [{ topic: 't', payload: {} }])
  const delivered = nextEvent(relay, 'delivered', { timeoutMs: 60_000 })
  await relay.start()
  await started.promise
  proxy.pause()
  finish.resolve() // the handler succeeds while the database is unreachable
  await waitFor(() => settleErrors.length >= 1, { timeoutMs: 30_000, what: 'a settle timeout' })
  expect(isOutboxError(settleErrors[0]!.error, 'TIMEOUT')).toBe(true)
  proxy.resume()
  // The settle that timed out was still in the network and ran on the server once it came back,
  // so the relay's retry of it finds the row gone: the event may say `settled: false` although
  // this relay's own result was written.
  const event = await delivered
  await waitFor(async () => (await w.rows(outbox, m!.id)).length === 0, { what: 'the row to be settled' })
  expect(calls).toBe(1)
  console.log(
    figuresLine('frozen-settle', {
      settleTimeouts: settleErrors.length,
      eventSettled: event.settled,
      handlerCalls: calls,
    }),
  )
})

test('relay.stop() during a freeze returns within a bound when notify is off', async () => {
  const outbox = await w.outbox('frozen_stop')
  const backend = pgBackend({ connectionString: proxy.url, commandTimeoutMs: BOUND_MS, max: 2 })
  const relay = w.relay(outbox, { backend, handlers: { t: () => {} }, pollIntervalMs: 100, notify: false })
  const firstClaim = nextEvent(relay, 'claimed')
  await relay.start()
  await firstClaim
  proxy.pause()
  const ms = await stopTime(relay)
  console.log(figuresLine('frozen-stop', { notify: false, stopMs: ms }))
  expect(ms).toBeLessThan(500 + BOUND_MS + SLACK_MS)
})

// Regression: stop() used to await the LISTEN client's end(), and pg's Client.end() waits for the
// server's FIN, which never comes through a frozen network. The listener now bounds end() and
// destroys the socket past the bound.
test('relay.stop() during a freeze returns within a bound when notify is on (LISTEN connection open)', async () => {
  const outbox = await w.outbox('frozen_stop_listen')
  const backend = pgBackend({ connectionString: proxy.url, commandTimeoutMs: BOUND_MS, max: 2 })
  const relay = w.relay(outbox, { backend, handlers: { t: () => {} }, pollIntervalMs: 100, notify: true })
  const firstClaim = nextEvent(relay, 'claimed')
  await relay.start()
  await firstClaim
  proxy.pause()
  const ms = await stopTime(relay)
  console.log(figuresLine('frozen-stop', { notify: true, stopMs: ms }))
  expect(ms).toBeLessThan(500 + BOUND_MS + SLACK_MS)
})

/** How long `relay.stop({ graceMs: 500 })` takes, or Infinity if it is still running past the bound. */
async function stopTime(relay: Relay): Promise<number> {
  const t0 = Date.now()
  let timer: ReturnType<typeof setTimeout> | undefined
  const done = await Promise.race([
    relay.stop({ graceMs: 500 }).then(() => true),
    new Promise<false>((r) => {
      timer = setTimeout(() => r(false), 500 + BOUND_MS + SLACK_MS + 1_000)
    }),
  ])
  clearTimeout(timer)
  return done ? Date.now() - t0 : Number.POSITIVE_INFINITY
}
