// Relays SIGKILLed every ~2 s while producers commit and roll back keyed messages: read back from
// the JetStream stream, every committed message is there exactly once (Nats-Msg-Id inside the
// stream's 2-minute duplicate window), no rolled-back one, and each key in commit order.
import { fileURLToPath } from 'node:url'
import { expectCrashSurvived, runBrokerCrash } from '@outboxkit/conformance'
import { expect, test } from 'vitest'
import { NATS_HOST, NATS_PORT, useTestStream } from './support/test-stream.js'

const testStream = useTestStream('crash')

test('relays SIGKILLed mid-drain: 0 lost, 0 phantom, exactly once, each key in commit order', async () => {
  const report = await runBrokerCrash({
    name: 'nats_crash',
    forwarderModule: fileURLToPath(new URL('./support/crash-forwarder.ts', import.meta.url)),
    broker: { servers: `${NATS_HOST}:${NATS_PORT}`, subject: `${testStream().prefix}.orders` },
    readNew: testStream().newRecords(),
  })
  expectCrashSurvived(report, 'nats crash', 'in the stream')
  const { verdict } = report
  expect(verdict.duplicates, 'duplicates inside the duplicate window').toBe(0)
  expect(verdict.outOfOrderKeys, 'keys out of commit order').toEqual([])
}, 120_000)
