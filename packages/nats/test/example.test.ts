// examples/nats-forwarder runs end to end against the real NATS (JetStream) on embedded PGlite,
// so the example cannot rot: every committed order is in the stream once and shipped exactly
// once, the rolled-back one is nowhere, and the consumer's redelivery was skipped by its dedup.
import { expect, test } from 'vitest'
import { runExample } from '../../../examples/nats-forwarder/src/app.js'
import { NATS_HOST, NATS_PORT } from './support/test-stream.js'

test('the nats-forwarder example: each committed order in the stream once and shipped once', async () => {
  const lines: string[] = []
  const summary = await runExample({ natsServers: `${NATS_HOST}:${NATS_PORT}`, log: (l) => lines.push(l) })
  expect(summary.committed).toHaveLength(4)
  expect(summary.rolledBack).toEqual(['chair'])
  expect(summary.inStream).toBe(4)
  expect(summary.shipments).toEqual(Object.fromEntries(summary.committed.map((id) => [id, 1])))
  expect(summary.duplicatesSkipped).toBeGreaterThanOrEqual(1)
  expect(lines.join('\n')).toContain('already shipped, only acked')
})
