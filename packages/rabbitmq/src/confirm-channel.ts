// The slice of an amqplib 2.x ConfirmChannel the forwarder uses, declared structurally (no import
// of amqplib's classes), and how a handle is recognised: by `waitForConfirms`, the method only a
// channel in confirm mode has (`connection.createConfirmChannel()`).
import { OutboxError } from '@outboxkit/core'
import { formatValue } from '@outboxkit/core/adapter'

/** The publish options the forwarder sets (a subset of amqplib's `Options.Publish`). */
export interface AmqpPublishOptions {
  persistent: boolean
  mandatory: boolean
  messageId: string
  type: string
  contentType: string
  headers: Record<string, string>
}

/** A message the broker returned (`basic.return`), as amqplib emits it on `'return'`. */
export interface AmqpReturnedMessage {
  fields: { replyCode?: number; replyText?: string; exchange?: string; routingKey?: string }
  properties: { messageId?: unknown }
}

/**
 * What the forwarder needs of an amqplib `ConfirmChannel`: `publish` with its confirm callback
 * (`null` on `basic.ack`, an error on `basic.nack` or when the channel closes first), the
 * `'return'`, `'error'` and `'close'` events, and `waitForConfirms`, by which it is recognised.
 */
export interface AmqpConfirmChannel {
  publish(
    exchange: string,
    routingKey: string,
    content: Buffer,
    options: AmqpPublishOptions,
    callback: (error: unknown) => void,
  ): boolean
  waitForConfirms(...args: never[]): unknown
  on(event: 'return', listener: (message: AmqpReturnedMessage) => void): unknown
  on(event: 'error', listener: (error: Error) => void): unknown
  on(event: 'close', listener: () => void): unknown
}

/** A function that opens a fresh confirm channel (and, if needed, its connection). */
export type ConfirmChannelFactory = () => AmqpConfirmChannel | Promise<AmqpConfirmChannel>

/** True when `value` looks like an amqplib confirm channel (it has `publish` and `waitForConfirms`). */
export function isConfirmChannel(value: unknown): value is AmqpConfirmChannel {
  const v = value as Partial<Record<'publish' | 'waitForConfirms' | 'on', unknown>> | null
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.publish === 'function' &&
    typeof v.waitForConfirms === 'function' &&
    typeof v.on === 'function'
  )
}

/** What `value` is, for a refusal: names an amqplib connection or plain channel when it is one. */
function describeHandle(value: unknown): string {
  const v = value as Partial<Record<'createConfirmChannel' | 'publish' | 'assertQueue', unknown>> | null
  if (typeof v === 'object' && v !== null) {
    if (typeof v.createConfirmChannel === 'function')
      return 'an amqplib connection: pass `await connection.createConfirmChannel()`, or `() => connection.createConfirmChannel()`'
    if (typeof v.publish === 'function')
      return 'a channel without publisher confirms (`connection.createChannel()`): create it with `connection.createConfirmChannel()`, so the forwarder can wait for the broker to confirm'
  }
  return formatValue(value)
}

/**
 * The handle a forwarder was given, checked: a confirm channel, or a factory of them.
 *
 * @throws OutboxError `INVALID_CONFIG` naming what was given otherwise.
 */
export function assertChannelSource(value: unknown): AmqpConfirmChannel | ConfirmChannelFactory {
  if (typeof value === 'function' || isConfirmChannel(value))
    return value as AmqpConfirmChannel | ConfirmChannelFactory
  throw new OutboxError(
    'INVALID_CONFIG',
    `rabbitmqForwarder needs an amqplib ConfirmChannel (\`connection.createConfirmChannel()\`) or a function that returns one, got ${describeHandle(value)}.`,
    { source: 'rabbitmq' },
  )
}

/**
 * What a channel factory produced, checked.
 *
 * @throws OutboxError `INVALID_CONFIG` when it is not a confirm channel.
 */
export function assertFactoryChannel(value: unknown): AmqpConfirmChannel {
  if (isConfirmChannel(value)) return value
  throw new OutboxError(
    'INVALID_CONFIG',
    `the channel function of rabbitmqForwarder must return an amqplib ConfirmChannel (\`connection.createConfirmChannel()\`), got ${describeHandle(value)}.`,
    { source: 'rabbitmq' },
  )
}
