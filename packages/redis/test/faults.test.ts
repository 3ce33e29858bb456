// Faults on the path between the forwarder's client and Redis, through a proxy this file owns:
// a frozen path (silence), a cut one (reset, then refused), and the reconnect after it heals.
import { deliveredMessage, expectOutboxError, type PausableProxy, rejection } from '@outboxkit/conformance'
import { redisStreamForwarder } from '@outboxkit/redis'
import { afterAll, afterEach, beforeAll, beforeEach, expect, test } from 'vitest'
import { type ProxiedRedis, proxiedRedis } from './support/proxied-redis.js'
import { type RedisReader, receivedFrom, uniqueKey } from './support/redis-streams.js'

const TIMEOUT_MS = 400
// Longer than TIMEOUT_MS: a forward after the cut waits in node-redis's offline queue, then times out.
const RECONNECT_DELAY_MS = 1_500
const context = () => ({ signal: new AbortController().signal })
const stream = uniqueKey('faults')
let path: ProxiedRedis
let proxy: PausableProxy
let direct: RedisReader
let proxied: RedisReader
beforeAll(async () => {
  path = await proxiedRedis(RECONNECT_DELAY_MS)
  ;({ proxy, direct, proxied } = path)
})
beforeEach(async () => {
  await direct.del(stream)
})
afterEach(() => {
  proxy.heal()
  proxy.resume()
})
afterAll(async () => {
  await direct?.del(stream)
  await path?.close()
})

/** Resolves once the proxied client is ready again (it reconnects by itself), within 10 s. */
function readyAgain(): Promise<void> {
  if (proxied.isReady) return Promise.resolve()
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the client did not reconnect within 10 s')), 10_000)
    proxied.once('ready', () => {
      clearTimeout(timer)
      resolve()
    })
  })
}

/** Resolves once the proxied client has emitted `count` more `error` events, within 10 s. */
function clientErrors(count: number): Promise<void> {
  let seen = 0
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proxied.off('error', onError)
      reject(new Error(`the client emitted ${seen} of ${count} errors within 10 s`))
    }, 10_000)
    const onError = () => {
      if (++seen < count) return
      clearTimeout(timer)
      proxied.off('error', onError)
      resolve()
    }
    proxied.on('error', onError)
  })
}

test('a frozen path: TIMEOUT within the bound, then success once it moves again', async () => {
  const forward = redisStreamForwarder(proxied, { stream, timeoutMs: TIMEOUT_MS })
  proxy.pause()
  const started = Date.now()
  const error = await rejection(Promise.resolve(forward(deliveredMessage(), context())))
  const elapsed = Date.now() - started
  expectOutboxError(error, 'TIMEOUT', { source: 'redis', message: [`within ${TIMEOUT_MS} ms`, stream] })
  expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS - 5)
  expect(elapsed).toBeLessThan(TIMEOUT_MS + 5_000)
  proxy.resume()
  const after = deliveredMessage()
  await forward(after, context())
  // At least once: the frozen XADD was already written, so Redis may hold it too, after resume.
  expect((await receivedFrom(direct, stream)).map((r) => r.id)).toContain(after.id)
})

test('a cut path: the XADD in flight rejects with BROKER; while offline, TIMEOUT; once healed, success, and the XADD queued while refused is never sent', async () => {
  const forward = redisStreamForwarder(proxied, { stream, timeoutMs: TIMEOUT_MS })
  await readyAgain()
  proxy.pause()
  const inFlight = forward(deliveredMessage(), context())
  // The lost connection, then the refused reconnect node-redis tries at once: then it waits.
  const lostAndRefused = clientErrors(2)
  proxy.cut({ refuse: true })
  expectOutboxError(await rejection(Promise.resolve(inFlight)), 'BROKER', {
    source: 'redis',
    message: ['got no reply from Redis'],
  })
  await lostAndRefused
  proxy.resume()
  // Offline until the next reconnect attempt: node-redis queues the XADD; TIMEOUT withdraws it.
  const queued = deliveredMessage()
  expectOutboxError(await rejection(Promise.resolve(forward(queued, context()))), 'TIMEOUT', {
    source: 'redis',
    message: [stream],
  })
  const ready = readyAgain()
  proxy.heal()
  await ready
  const healed = deliveredMessage()
  await forward(healed, context())
  const ids = (await receivedFrom(direct, stream)).map((r) => r.id)
  expect(ids).toContain(healed.id)
  // node-redis sends its offline queue first on reconnect: the withdrawn XADD would precede this one.
  expect(ids).not.toContain(queued.id)
})
