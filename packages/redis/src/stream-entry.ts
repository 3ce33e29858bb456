import { type BrokerEnvelope, brokerEnvelope, type ForwardableMessage } from '@outboxkit/core/adapter'
import { SOURCE } from './redis-client.js'

/** The field of a stream entry that carries the outbox message id (the consumer's dedup key). */
export const ID_FIELD = 'id'
/** The field that carries the outbox topic. */
export const TOPIC_FIELD = 'topic'
/** The field that carries the message key, present only when the message has one. */
export const KEY_FIELD = 'key'
/** The field that carries the message's own headers (`traceparent` included) as a JSON object. */
export const HEADERS_FIELD = 'headers'
/** The field that carries the payload as JSON text. */
export const PAYLOAD_FIELD = 'payload'

/**
 * The fields of the stream entry of `message`: `id`, `topic`, `key` (when set), `headers` (the
 * message's own headers as JSON) and `payload` (JSON), in that order.
 *
 * @throws OutboxError `INVALID_MESSAGE` when the payload cannot be written as JSON.
 */
export function streamEntryFields(message: ForwardableMessage): Record<string, string> {
  const envelope: BrokerEnvelope = brokerEnvelope(message, SOURCE)
  const fields: Record<string, string> = { [ID_FIELD]: envelope.id, [TOPIC_FIELD]: envelope.topic }
  if (envelope.key !== null) fields[KEY_FIELD] = envelope.key
  fields[HEADERS_FIELD] = JSON.stringify(message.headers)
  fields[PAYLOAD_FIELD] = envelope.body
  return fields
}
