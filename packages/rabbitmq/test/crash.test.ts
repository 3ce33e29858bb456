// Relays SIGKILLed every ~2 s while producers commit and roll back keyed messages: read back from
// the queue, every committed message is there at least once, no rolled-back one, and each key's
// messages first appear in commit order. AMQP has no dedup: a message in flight at a kill may be
// published twice (same messageId); the duplicates are counted and reported.
import { fileURLToPath } from 'node:url'
import { type BrokerRecord, expectCrashSurvived, runBrokerCrash } from '@outboxkit/conformance'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { RABBITMQ_URL, TestBroker } from './rabbitmq-broker.js'

let broker: TestBroker
beforeAll(async () => {
  broker = await new TestBroker().start()
})
afterAll(() => broker?.close())

test('relays SIGKILLed mid-drain: 0 lost, 0 phantom, each key in commit order; duplicates counted', async () => {
  const queue = await broker.queue('crash')
  const readNew = async (): Promise<BrokerRecord[]> =>
    (await broker.drain(queue)).map((m) => ({
      id: String(m.properties.messageId),
      key: (m.properties.headers?.['outboxkit-key'] as string | undefined) ?? null,
    }))
  const report = await runBrokerCrash({
    name: 'rabbitmq_crash',
    forwarderModule: fileURLToPath(new URL('./support/crash-forwarder.ts', import.meta.url)),
    broker: { url: RABBITMQ_URL, exchange: broker.exchange, routingKey: 'crash' },
    readNew,
  })
  expectCrashSurvived(report, 'rabbitmq crash', 'in the queue')
  const { verdict } = report
  // At least once: at most the messages in flight at the kills come twice.
  expect(verdict.duplicates).toBeLessThanOrEqual(report.kills * 20)
  expect(verdict.outOfOrderKeys, 'keys out of commit order').toEqual([])
}, 120_000)
