import { OutboxError } from '@outboxkit/core'

/** The slice of an amqplib `ConsumeMessage` {@link amqpInboxMessage} reads. */
export interface AmqpMessageLike {
  readonly content: Buffer
  readonly properties: { readonly messageId?: string | undefined; readonly type?: string | undefined }
}

/** A message read from RabbitMQ, as `processOnce` and `inboxHandler` take it. */
export interface AmqpInboxMessage<M> {
  /** The outbox message id, from the AMQP `messageId` property. */
  readonly id: string
  /** The outbox topic (the AMQP `type` property), or `null`. */
  readonly topic: string | null
  /** The payload, parsed from the message's JSON content. */
  readonly payload: unknown
  /** The AMQP message itself (to `channel.ack()` it once the transaction committed). */
  readonly msg: M
}

/**
 * The inbox view of a message that `rabbitmqForwarder` sent: its id is the AMQP `messageId`
 * property (the outbox message id), so a redelivery (a consumer that died before its ack, or a
 * republish by the relay) is recognised by `processOnce`. Ack after your transaction committed.
 *
 * @example
 * ```ts
 * await channel.consume('invoices', async (m) => {
 *   if (!m) return
 *   await handle(amqpInboxMessage(m))   // handle = inboxHandler(inbox, pool, async (message, client) => ...)
 *   channel.ack(m)
 * })
 * ```
 * @throws OutboxError `INVALID_MESSAGE` when the message has no `messageId`, or its content is not JSON.
 */
export function amqpInboxMessage<M extends AmqpMessageLike>(msg: M): AmqpInboxMessage<M> {
  const id = msg.properties.messageId ?? ''
  if (typeof id !== 'string' || id === '') {
    throw new OutboxError(
      'INVALID_MESSAGE',
      'this AMQP message has no messageId property, so processOnce cannot recognise a redelivery: publish with a messageId (rabbitmqForwarder does).',
      { source: 'rabbitmq' },
    )
  }
  let payload: unknown
  try {
    payload = JSON.parse(msg.content.toString('utf8'))
  } catch (cause) {
    throw new OutboxError('INVALID_MESSAGE', `AMQP message ${id}: its content is not JSON.`, {
      cause,
      source: 'rabbitmq',
    })
  }
  return { id, topic: msg.properties.type || null, payload, msg }
}
