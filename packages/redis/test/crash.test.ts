// Relays SIGKILLed every ~2 s while producers commit and roll back keyed messages: read back from
// the Redis stream, every committed message is there at least once, no rolled-back one, and each
// key's messages first appear in commit order. Redis 7 has no idempotent XADD, so a message in
// flight at a kill may be appended twice: the duplicates are counted and reported, not refused.
import { fileURLToPath } from 'node:url'
import { type BrokerRecord, expectCrashSurvived, runBrokerCrash } from '@outboxkit/conformance'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { connectRedis, REDIS_URL, type RedisReader, uniqueKey } from './support/redis-streams.js'

const stream = uniqueKey('crash')
let reader: RedisReader
beforeAll(async () => {
  reader = await connectRedis()
})
afterAll(async () => {
  await reader?.del(stream)
  reader?.destroy()
})

/** A reader of the entries appended to `stream` since its previous call (XRANGE after the last id). */
function newEntries(): () => Promise<BrokerRecord[]> {
  let after = '-'
  return async () => {
    const entries = ((await reader.xRange(stream, after, '+', { COUNT: 10_000 })) ?? []).flatMap((e) =>
      e ? [e] : [],
    )
    if (entries.length > 0) after = `(${entries[entries.length - 1]!.id}`
    return entries.map((e) => ({ id: String(e.message.id), key: e.message.key ?? null }))
  }
}

test('relays SIGKILLed mid-drain: 0 lost, 0 phantom, each key in commit order; duplicates counted', async () => {
  const report = await runBrokerCrash({
    name: 'redis_crash',
    forwarderModule: fileURLToPath(new URL('./support/crash-forwarder.ts', import.meta.url)),
    broker: { url: REDIS_URL, stream },
    readNew: newEntries(),
  })
  expectCrashSurvived(report, 'redis crash', 'entries')
  const { verdict } = report
  // At least once: at most the messages in flight at the kills come twice.
  expect(verdict.duplicates).toBeLessThanOrEqual(report.kills * 20)
  expect(verdict.outOfOrderKeys, 'keys out of commit order').toEqual([])
}, 120_000)
