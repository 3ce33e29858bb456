// The NATS headers of a forwarded message: the envelope's headers (the message's own, the topic,
// the key) and the content type. The client adds Nats-Msg-Id from the msgID option.

import { headers, type MsgHdrs } from '@nats-io/nats-core'
import { OutboxError } from '@outboxkit/core'
import { BROKER_CONTENT_TYPE, type BrokerEnvelope } from '@outboxkit/core/adapter'
import { NATS_SOURCE } from './jetstream-client.js'

/** The header that carries {@link BROKER_CONTENT_TYPE}. */
export const CONTENT_TYPE_HEADER = 'content-type'

/**
 * The NATS headers of `envelope`, names kept as they are (NATS headers are case-sensitive).
 *
 * @throws OutboxError `INVALID_MESSAGE` when a header name or value cannot travel in a NATS
 * header (a `:` or a control character in the name, a line break in the value): the relay
 * dead-letters the message after its attempts, with this reason.
 */
export function natsHeaders(envelope: BrokerEnvelope): MsgHdrs {
  const result = headers()
  for (const [name, value] of Object.entries(envelope.headers)) {
    try {
      result.set(name, value)
    } catch (cause) {
      throw new OutboxError(
        'INVALID_MESSAGE',
        `message ${envelope.id}: its header ${JSON.stringify(name)} cannot travel as a NATS header (${(cause as Error).message}).`,
        { cause, source: NATS_SOURCE },
      )
    }
  }
  result.set(CONTENT_TYPE_HEADER, BROKER_CONTENT_TYPE)
  return result
}
