// One confirm channel as the forwarder watches it: its `basic.return`s (which RabbitMQ sends
// before the `basic.ack` of the same mandatory message), the error the server closed it with, and
// whether it has closed. One watcher per channel, shared by every forwarder on it.
import { OutboxError } from '@outboxkit/core'
import type { BrokerEnvelope } from '@outboxkit/core/adapter'
import { BROKER_CONTENT_TYPE } from '@outboxkit/core/adapter'
import type { AmqpConfirmChannel, AmqpReturnedMessage } from './confirm-channel.js'

/** Where a message goes: the exchange and routing key of one publish. */
export interface AmqpTarget {
  readonly exchange: string
  readonly routingKey: string
}

/** A confirm channel with the state the forwarder reads from its events. */
export interface WatchedChannel {
  readonly channel: AmqpConfirmChannel
  /** True once the channel emitted `'close'` (itself, or its connection, closed). */
  readonly closed: boolean
  /** Publishes `envelope` persistent and mandatory; resolves on its confirm, rejects otherwise. */
  publish(envelope: BrokerEnvelope, target: AmqpTarget): Promise<void>
}

const watchers = new WeakMap<AmqpConfirmChannel, WatchedChannel>()

/** The {@link WatchedChannel} of `channel`, made (and its listeners added) on first use. */
export function watchChannel(channel: AmqpConfirmChannel): WatchedChannel {
  let watched = watchers.get(channel)
  if (!watched) {
    watched = createWatcher(channel)
    watchers.set(channel, watched)
  }
  return watched
}

const describe = (id: string, target: AmqpTarget) =>
  `message ${id} on exchange ${JSON.stringify(target.exchange)} with routing key ${JSON.stringify(target.routingKey)}`

function createWatcher(channel: AmqpConfirmChannel): WatchedChannel {
  // Returns of the messages this watcher is waiting for, by message id, oldest first.
  const awaiting = new Map<string, number>()
  const returned = new Map<string, AmqpReturnedMessage[]>()
  let closed = false
  let closeError: Error | undefined
  channel.on('return', (message) => {
    const id = message.properties.messageId
    if (typeof id !== 'string' || !awaiting.has(id)) return
    returned.set(id, [...(returned.get(id) ?? []), message])
  })
  // The server closes a channel with an error (a missing exchange: 404 NOT_FOUND); without a
  // listener amqplib would throw it out of the socket handler. It is reported with the close.
  channel.on('error', (error) => {
    closeError = error
  })
  channel.on('close', () => {
    closed = true
  })
  const settle = (id: string): AmqpReturnedMessage | undefined => {
    const left = (awaiting.get(id) ?? 1) - 1
    if (left > 0) awaiting.set(id, left)
    else awaiting.delete(id)
    const [first, ...rest] = returned.get(id) ?? []
    if (rest.length > 0) returned.set(id, rest)
    else returned.delete(id)
    return first
  }
  const failure = (envelope: BrokerEnvelope, target: AmqpTarget, error: unknown): OutboxError =>
    confirmFailure(describe(envelope.id, target), error, closed, closeError)
  return {
    channel,
    get closed() {
      return closed
    },
    publish(envelope, target) {
      return new Promise<void>((resolve, reject) => {
        awaiting.set(envelope.id, (awaiting.get(envelope.id) ?? 0) + 1)
        const onConfirm = (error: unknown) => {
          const bounced = settle(envelope.id)
          if (error) reject(failure(envelope, target, error))
          else if (bounced) reject(unroutable(describe(envelope.id, target), bounced))
          else resolve()
        }
        try {
          channel.publish(
            target.exchange,
            target.routingKey,
            Buffer.from(envelope.body),
            publishOptions(envelope),
            onConfirm,
          )
        } catch (error) {
          settle(envelope.id)
          reject(publishRefused(describe(envelope.id, target), error, closed, closeError))
        }
      })
    },
  }
}

/** The AMQP properties of `envelope`, as the contract says the broker receives them. */
function publishOptions(envelope: BrokerEnvelope) {
  return {
    persistent: true,
    mandatory: true,
    messageId: envelope.id,
    type: envelope.topic,
    contentType: BROKER_CONTENT_TYPE,
    headers: { ...envelope.headers },
  }
}

const textOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

function unroutable(what: string, bounced: AmqpReturnedMessage): OutboxError {
  const { replyCode, replyText } = bounced.fields
  return new OutboxError(
    'BROKER',
    `${what} is unroutable: RabbitMQ returned it (${replyCode ?? '?'} ${replyText ?? 'NO_ROUTE'}), no queue is bound for this routing key. Bind a queue to the exchange for it; the relay retries, then dead-letters it.`,
    { source: 'rabbitmq' },
  )
}

function confirmFailure(
  what: string,
  error: unknown,
  closed: boolean,
  closeError: Error | undefined,
): OutboxError {
  if (closed || /closed/i.test(textOf(error))) {
    const reason = closeError ? `: ${closeError.message}` : ''
    return new OutboxError(
      'BROKER',
      `the channel or its connection closed before RabbitMQ confirmed ${what}${reason}. The relay retries it.`,
      { cause: closeError ?? error, source: 'rabbitmq' },
    )
  }
  return new OutboxError(
    'BROKER',
    `RabbitMQ refused ${what} (basic.nack: a queue with x-overflow reject-publish is full, or the broker failed to store it; AMQP gives no reason). The relay retries it.`,
    { cause: error, source: 'rabbitmq' },
  )
}

function publishRefused(
  what: string,
  error: unknown,
  closed: boolean,
  closeError: Error | undefined,
): OutboxError {
  // IllegalOperationError: amqplib's refusal to send on a channel that is closing or closed.
  if (closed || (error instanceof Error && error.name === 'IllegalOperationError'))
    return confirmFailure(what, error, true, closeError)
  return new OutboxError('BROKER', `amqplib could not publish ${what}: ${textOf(error)}`, {
    cause: error,
    source: 'rabbitmq',
  })
}
