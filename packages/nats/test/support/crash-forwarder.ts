// The forwarder of the crash test's relay processes (see the conformance kit's relay-child.ts):
// a JetStream client of its own, with unbounded quick reconnects, and jetStreamForwarder on it.
import { jetstream } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import type { Handler } from '@outboxkit/core'
import { jetStreamForwarder } from '@outboxkit/nats'

/** `broker`: `{ servers, subject }`. */
export async function createForwarder(broker: Record<string, unknown>): Promise<Handler> {
  const nc = await connect({
    servers: String(broker.servers),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
  })
  return jetStreamForwarder(jetstream(nc), { subject: String(broker.subject), timeoutMs: 2_000 })
}
