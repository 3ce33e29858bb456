// jetStreamForwarder: a relay handler that publishes each outbox message into JetStream and
// resolves on the PubAck, so a message is marked delivered only once a stream stored it.
import type { DeliveredMessage, Handler, HandlerContext } from '@outboxkit/core'
import { brokerConfirmWithin, brokerEnvelope } from '@outboxkit/core/adapter'
import { type JetStreamForwarderOptions, resolveForwarderOptions } from './forwarder-options.js'
import { assertJetStreamClient, type JetStreamPublisher, NATS_SOURCE } from './jetstream-client.js'
import { natsHeaders } from './message-headers.js'
import { toPublishError } from './publish-error.js'

/**
 * A relay handler that publishes each message into NATS JetStream on `options.subject` and
 * resolves once JetStream acknowledged it (a PubAck; a duplicate ack, `duplicate: true`, is a
 * success: the stream already holds that `Nats-Msg-Id`). The stream receives the payload as JSON
 * (`content-type: application/json`), `Nats-Msg-Id` = `message.id`, the headers
 * `outboxkit-topic`, `outboxkit-key` (when the message has a key) and every message header.
 *
 * The handler rejects, so the relay retries with its backoff: `TIMEOUT` when no PubAck came within
 * `timeoutMs`, `BROKER` when no stream captures the subject, JetStream refused the message (its
 * reason, e.g. a payload above the stream's `max_msg_size`) or the connection was lost.
 *
 * @example
 * ```ts
 * const js = jetstream(await connect({ servers: '127.0.0.1:4222' }))
 * createRelay(outbox, { backend, handlers: { 'order.created': jetStreamForwarder(js, { subject: 'orders.created' }) } })
 * ```
 * @param js - the user's JetStream client, `jetstream(nc)` of `@nats-io/jetstream` 3.x
 * @param options - `subject` (a subject or a function of the message), `timeoutMs`, `stream`
 * @throws OutboxError `INVALID_CONFIG` for a handle that is not a JetStream client, or invalid options.
 */
export function jetStreamForwarder(js: JetStreamPublisher, options: JetStreamForwarderOptions): Handler {
  assertJetStreamClient(js)
  const { subjectOf, timeoutMs, stream } = resolveForwarderOptions(options)
  return async (message: DeliveredMessage, context: HandlerContext): Promise<void> => {
    const envelope = brokerEnvelope(message, NATS_SOURCE)
    const subject = subjectOf(message)
    const publishing = js
      .publish(subject, envelope.body, {
        msgID: envelope.id,
        timeout: timeoutMs,
        headers: natsHeaders(envelope),
        ...(stream === undefined ? {} : { expect: { streamName: stream } }),
      })
      .catch((error: unknown) => {
        throw toPublishError(error, message.id, subject)
      })
    const what = () => `the PubAck of message ${message.id} on subject ${JSON.stringify(subject)}`
    await brokerConfirmWithin(publishing, timeoutMs, what, NATS_SOURCE, context?.signal)
  }
}
