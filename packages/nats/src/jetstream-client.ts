// The slice of @nats-io/jetstream's JetStreamClient the forwarder uses, declared structurally
// (a `jetstream(nc)` of any 3.x release fits it), and how a wrong handle is recognised.

import type { MsgHdrs } from '@nats-io/nats-core'
import { OutboxError } from '@outboxkit/core'
import { formatValue } from '@outboxkit/core/adapter'

/** The package's `[outboxkit] [nats]` source. */
export const NATS_SOURCE = 'nats'

/** What JetStream answers once the stream stored a message (the client's `PubAck`). */
export interface JetStreamPubAck {
  /** The stream that stored the message. */
  readonly stream: string
  /** Its sequence in that stream. */
  readonly seq: number
  /** True when the stream already held this `Nats-Msg-Id` inside its duplicate window. */
  readonly duplicate: boolean
}

/** The publish options the forwarder passes (a part of the client's `JetStreamPublishOptions`). */
export interface JetStreamForwardPublishOptions {
  /** Sent as the `Nats-Msg-Id` header: the stream's dedup key. */
  msgID: string
  /** Milliseconds the client waits for the PubAck. */
  timeout: number
  headers: MsgHdrs
  /**
   * `streamName`: the stream that must capture the subject (`Nats-Expected-Stream`).
   *
   * @defaultValue none: any stream
   */
  expect?: { streamName: string }
}

/** The part of a `JetStreamClient` (from `jetstream(nc)`) the forwarder uses. */
export interface JetStreamPublisher {
  publish(subject: string, payload: string, options: JetStreamForwardPublishOptions): Promise<JetStreamPubAck>
  /** The JetStream API prefix (`$JS.API`): with `jetstreamManager`, what tells a client apart. */
  readonly apiPrefix: string
  jetstreamManager(...args: never[]): Promise<unknown>
}

const hasFunctions = (value: object, names: readonly string[]): boolean =>
  names.every((name) => typeof (value as Record<string, unknown>)[name] === 'function')

/** What `value` is, when it is a NATS handle but not a JetStream client, for the message. */
function describeWrongHandle(value: unknown): string {
  if (value !== null && typeof value === 'object') {
    if (hasFunctions(value, ['request', 'flush', 'drain', 'subscribe']))
      return 'a NatsConnection: pass jetstream(nc) from @nats-io/jetstream instead (a plain NATS publish is not confirmed)'
    if (hasFunctions(value, ['jetstream', 'getAccountInfo']))
      return 'a JetStreamManager: pass jsm.jetstream() instead'
  }
  return formatValue(value)
}

/**
 * Checks that `value` is a JetStream client as `jetstream(nc)` of `@nats-io/jetstream` returns it:
 * `publish` and `jetstreamManager` functions and the `apiPrefix` string.
 *
 * @throws OutboxError `INVALID_CONFIG` naming what was given (a `NatsConnection` or a
 * `JetStreamManager` is named as such, with the call that gives the client).
 */
export function assertJetStreamClient(value: unknown): asserts value is JetStreamPublisher {
  if (
    value !== null &&
    typeof value === 'object' &&
    hasFunctions(value, ['publish', 'jetstreamManager']) &&
    typeof (value as { apiPrefix?: unknown }).apiPrefix === 'string'
  )
    return
  throw new OutboxError(
    'INVALID_CONFIG',
    `jetStreamForwarder(js, options) needs a JetStream client from jetstream(nc) of @nats-io/jetstream 3.x, got ${describeWrongHandle(value)}.`,
    { source: NATS_SOURCE },
  )
}
