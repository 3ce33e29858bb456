// A relay handler that forwards outbox messages to Kafka with @platformatic/kafka. Type-checked in
// CI against the package's own types (`pnpm typecheck`); never run there: no Kafka broker runs on
// the CI machine. docs/forwarders/kafka.md shows this file, and a test keeps the two identical.
import type { DeliveredMessage, Handler } from '@outboxkit/core'
import { BROKER_CONTENT_TYPE, brokerEnvelope } from '@outboxkit/core/adapter'
import { Producer, stringSerializers } from '@platformatic/kafka'

/** A producer that writes each record once per partition, in order, even when it retries. */
export function kafkaProducer(bootstrapBrokers: string[]): Producer<string, string, string, string> {
  return new Producer({
    clientId: 'outboxkit-relay',
    bootstrapBrokers,
    serializers: stringSerializers,
    idempotent: true, // the broker drops the producer's own retries: no duplicate within a session
    acks: -1, // resolve only once every in-sync replica has the record
  })
}

/**
 * The handler: one record per outbox message, `key` = the message key, so a key's messages go to
 * one partition in the order the relay hands them over (with `orderedTopics`, commit order); the
 * message id travels as the `outboxkit-id` header for the consumer's deduplication (the idempotent
 * producer does not dedup across relay restarts). It resolves only when Kafka acknowledged the
 * record, so a failure makes the relay retry with backoff.
 */
export function kafkaForwarder(
  producer: Producer<string, string, string, string>,
  topic: string | ((message: DeliveredMessage) => string),
): Handler {
  return async (message) => {
    const envelope = brokerEnvelope(message, 'kafka')
    await producer.send({
      messages: [
        {
          topic: typeof topic === 'function' ? topic(message) : topic,
          ...(envelope.key === null ? {} : { key: envelope.key }),
          value: envelope.body,
          headers: { ...envelope.headers, 'outboxkit-id': envelope.id, 'content-type': BROKER_CONTENT_TYPE },
        },
      ],
    })
  }
}
