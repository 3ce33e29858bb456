import { OutboxError } from '@outboxkit/core'
import { BROKER_KEY_HEADER, BROKER_TOPIC_HEADER } from '@outboxkit/core/adapter'
import { NATS_SOURCE } from './jetstream-client.js'

/** The slice of a NATS message (a JetStream `JsMsg` or a core `Msg`) {@link jetStreamInboxMessage} reads. */
export interface NatsMessageLike {
  readonly headers?: { get(name: string): string } | undefined
  readonly data: Uint8Array
}

/** A message read from NATS, as `processOnce` and `inboxHandler` take it. */
export interface NatsInboxMessage<M> {
  /** The outbox message id, from the `Nats-Msg-Id` header. */
  readonly id: string
  /** The outbox topic (`outboxkit-topic` header), or `null`. */
  readonly topic: string | null
  /** The key (`outboxkit-key` header), or `null`. */
  readonly key: string | null
  /** The payload, parsed from the message's JSON data. */
  readonly payload: unknown
  /** The NATS message itself (to `ack()` it once the transaction committed). */
  readonly msg: M
}

/**
 * The inbox view of a message that `jetStreamForwarder` sent: its id is the `Nats-Msg-Id` header
 * (the outbox message id), so a redelivery, or a republish that JetStream's duplicate window let
 * through, is recognised by `processOnce`. Ack the NATS message after your transaction committed.
 *
 * @example
 * ```ts
 * for await (const m of await consumer.consume()) {
 *   await handle(jetStreamInboxMessage(m))   // handle = inboxHandler(inbox, pool, async (message, client) => ...)
 *   m.ack()
 * }
 * ```
 * @throws OutboxError `INVALID_MESSAGE` when the message has no `Nats-Msg-Id` header (it was not
 * published with a message id), or its data is not JSON.
 */
export function jetStreamInboxMessage<M extends NatsMessageLike>(msg: M): NatsInboxMessage<M> {
  const id = msg.headers?.get('Nats-Msg-Id') ?? ''
  if (id === '') {
    throw new OutboxError(
      'INVALID_MESSAGE',
      'this NATS message has no Nats-Msg-Id header, so processOnce cannot recognise a redelivery: publish with a message id (jetStreamForwarder does).',
      { source: NATS_SOURCE },
    )
  }
  let payload: unknown
  try {
    payload = JSON.parse(new TextDecoder().decode(msg.data))
  } catch (cause) {
    throw new OutboxError('INVALID_MESSAGE', `NATS message ${id}: its data is not JSON.`, {
      cause,
      source: NATS_SOURCE,
    })
  }
  const header = (name: string) => msg.headers?.get(name) || null
  return { id, topic: header(BROKER_TOPIC_HEADER), key: header(BROKER_KEY_HEADER), payload, msg }
}
