// What a forwarder hands to a message broker: one envelope per outbox message, the same for
// every broker (the contract's "Forwarders": the payload as JSON, the id as the broker's message
// id, the topic and key as headers, every message header passed on).
import { OutboxError } from '../outbox/errors.js'

/** The content type of every forwarded body: the payload as JSON text. */
export const BROKER_CONTENT_TYPE = 'application/json'
/** The broker header that carries the outbox topic. */
export const BROKER_TOPIC_HEADER = 'outboxkit-topic'
/** The broker header that carries the message key, present only when the message has one. */
export const BROKER_KEY_HEADER = 'outboxkit-key'

/** The part of a delivered message a forwarder reads (a relay's `DeliveredMessage` is one). */
export interface ForwardableMessage {
  readonly id: string
  readonly topic: string
  readonly key: string | null
  readonly payload: unknown
  readonly headers: Readonly<Record<string, string>>
}

/** One message as every broker receives it. */
export interface BrokerEnvelope {
  /** The outbox message id: the broker's message id and dedup key. */
  readonly id: string
  readonly topic: string
  readonly key: string | null
  /** The payload as JSON text. */
  readonly body: string
  /**
   * The message's own headers (`traceparent` included) plus {@link BROKER_TOPIC_HEADER} and, when
   * the message has a key, {@link BROKER_KEY_HEADER}.
   */
  readonly headers: Readonly<Record<string, string>>
}

/**
 * The envelope of `message`: its JSON body and the headers every forwarder sends.
 *
 * @throws OutboxError `INVALID_MESSAGE` when the payload cannot be written as JSON (the relay
 * then dead-letters it after its attempts, with this reason).
 */
export function brokerEnvelope(message: ForwardableMessage, source: string): BrokerEnvelope {
  let body: string | undefined
  try {
    body = JSON.stringify(message.payload)
  } catch (cause) {
    throw new OutboxError(
      'INVALID_MESSAGE',
      `message ${message.id}: its payload cannot be written as JSON.`,
      {
        cause,
        source,
      },
    )
  }
  if (body === undefined) {
    throw new OutboxError('INVALID_MESSAGE', `message ${message.id}: its payload is not JSON (undefined).`, {
      source,
    })
  }
  const headers: Record<string, string> = { ...message.headers, [BROKER_TOPIC_HEADER]: message.topic }
  if (message.key !== null) headers[BROKER_KEY_HEADER] = message.key
  return { id: message.id, topic: message.topic, key: message.key, body, headers }
}

/**
 * `confirmation`, or an `OutboxError('TIMEOUT')` when the broker has not confirmed within `ms`, or
 * an `OutboxError('BROKER')` when `signal` aborts first (the relay gave up on this delivery). The
 * broker may still confirm later: at least once, the relay delivers the message again.
 *
 * @param what - what is awaited, for the message, e.g. `'the PubAck of message <id> on orders.created'`,
 * or a function that returns it (called only when the confirmation fails: no string per message)
 */
export function brokerConfirmWithin<T>(
  confirmation: Promise<T>,
  ms: number,
  what: string | (() => string),
  source: string,
  signal?: AbortSignal,
): Promise<T> {
  const describe = () => (typeof what === 'function' ? what() : what)
  return new Promise<T>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
    const onAbort = () => {
      done()
      reject(new OutboxError('BROKER', `the relay gave up waiting for ${describe()} (aborted).`, { source }))
    }
    const timer = setTimeout(() => {
      done()
      reject(
        new OutboxError(
          'TIMEOUT',
          `no confirmation from the broker within ${ms} ms for ${describe()}: check that the broker is reachable; the relay retries with backoff.`,
          { source },
        ),
      )
    }, ms)
    if (signal?.aborted) return onAbort()
    signal?.addEventListener('abort', onAbort, { once: true })
    confirmation.then(
      (value) => {
        done()
        resolve(value)
      },
      (error: unknown) => {
        done()
        reject(error)
      },
    )
  })
}
