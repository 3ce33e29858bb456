// The forwarder conformance suite on the real NATS server, into this file's own stream.
import { runForwarderConformance } from '@outboxkit/conformance'
import { jetStreamForwarder } from '@outboxkit/nats'
import { createTestStream, type TestStream } from './support/test-stream.js'

runForwarderConformance({
  name: 'nats',
  async setup() {
    const stream: TestStream = await createTestStream('conformance')
    return {
      forwarder: () =>
        jetStreamForwarder(stream.js, { subject: `${stream.prefix}.orders`, timeoutMs: 2_000 }),
      unroutable: () => jetStreamForwarder(stream.js, { subject: stream.uncaptured, timeoutMs: 2_000 }),
      received: () => stream.records(),
      reset: () => stream.purge(),
      dedupsById: true,
      teardown: () => stream.delete(),
    }
  },
})
