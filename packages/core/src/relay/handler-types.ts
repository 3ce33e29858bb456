import type { HandlerPayload, Outbox, TopicName } from '../outbox/define-outbox.js'

/** A message as a handler receives it. */
export interface DeliveredMessage<TPayload = unknown, TTopic extends string = string> {
  /** UUIDv7 id, stable across redeliveries: use it as your idempotency key. */
  readonly id: string
  readonly topic: TTopic
  readonly key: string | null
  readonly payload: TPayload
  readonly headers: Readonly<Record<string, string>>
  /** 1-based: this delivery's attempt number. */
  readonly attempts: number
  readonly createdAt: Date
}

/** The second argument of a handler. */
export interface HandlerContext {
  /**
   * Aborted when the relay gives up on this run: at the end of `stop({ graceMs })`, or when the
   * message's lease really lapsed while the handler still runs (its extensions failed, or the
   * heartbeat is off and the handler outlived `leaseMs`): another relay may then reclaim it.
   */
  readonly signal: AbortSignal
}

/** A handler of one topic. Resolve to deliver; throw `Retry`, `Cancel` or any error otherwise. */
export type Handler<TPayload = unknown, TTopic extends string = string> = (
  message: DeliveredMessage<TPayload, TTopic>,
  context: HandlerContext,
) => unknown

/**
 * Handlers by topic, typed from the outbox's schemas. Without `topics`, any topic name is
 * accepted and handlers receive `DeliveredMessage<unknown, string>`.
 */
export type Handlers<O extends Outbox<any>> =
  string extends TopicName<O>
    ? { [topic: string]: Handler<unknown, string> | undefined }
    : { [K in TopicName<O>]?: Handler<HandlerPayload<O, K>, K> }

/** Why a message was dead-lettered. */
export type DeadLetterReason = 'cancel' | 'max-attempts' | 'schema' | 'invalid-payload'
