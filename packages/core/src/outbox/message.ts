import type { Outbox, PublishPayload, TopicName } from './define-outbox.js'
import { OutboxError } from './errors.js'
import { formatValue } from './format-value.js'
import { finishMessage, invalidMessage, prepareOne } from './message-fields.js'
import { formatIssues, type StandardSchemaV1 } from './standard-schema.js'

/** Fields every published message may carry besides `topic` and `payload`. */
export interface MessageOptions {
  /**
   * Aggregate / ordering key (e.g. the order id): a string of at most 1 024 characters, or `null`
   * for none. Anything else is refused with `INVALID_MESSAGE` (convert a number yourself:
   * `String(order.id)`), so a key is stored exactly as given.
   *
   * @defaultValue `null`
   */
  key?: string | null
  /**
   * String-to-string metadata (tenant, trace context, ...).
   *
   * @defaultValue `{}`
   */
  headers?: Record<string, string>
  /**
   * Producer-side deduplication: a second publish with the same key, while the first row exists, is a no-op.
   *
   * @defaultValue `null`
   */
  dedupKey?: string | null
  /**
   * Not delivered before `now() + delayMs` (database clock).
   *
   * @defaultValue `0`
   */
  delayMs?: number
}

/** A message to publish, typed by the outbox's topic schemas when it has them. */
export type PublishMessage<O extends Outbox<any>> = {
  [K in TopicName<O>]: MessageOptions & { topic: K; payload: PublishPayload<O, K> }
}[TopicName<O>]

/** What `publish` returns for one message. */
export interface PublishResult {
  /** The message id, a UUIDv7 string. When `published` is false: the id of the existing message holding the `dedupKey` when it is visible, else the id that was generated. */
  id: string
  /** `false` when a message with the same `dedupKey` already existed, so nothing was written. */
  published: boolean
}

/** A message after validation, ready to be written by a dialect's publish statement. */
export interface PreparedMessage {
  readonly id: string
  readonly topic: string
  readonly key: string | null
  /** The payload as JSON text. */
  readonly payload: string
  /** The headers as JSON text. */
  readonly headers: string
  readonly delayMs: number
  readonly dedupKey: string | null
}

/**
 * Validates messages against the outbox (topic, schema, key, headers, dedupKey, delayMs), encodes
 * payloads strictly as JSON and assigns UUIDv7 ids. Used by every adapter before it writes.
 *
 * @param outbox - the outbox definition
 * @param messages - the messages as given to `publish`/`publishMany`
 * @param source - adapter name for error messages, e.g. `'pg'`
 * @throws OutboxError `INVALID_MESSAGE` naming the first bad message; nothing is written.
 */
export async function prepareMessages(
  outbox: Outbox,
  messages: readonly unknown[],
  source: string,
): Promise<PreparedMessage[]> {
  const many = messages.length > 1
  const out: PreparedMessage[] = new Array(messages.length)
  for (let i = 0; i < messages.length; i++) {
    const index = many ? i : undefined
    const { prepared, schema } = prepareOne(outbox, messages[i], source, index)
    if (schema) {
      let result = schema['~standard'].validate(prepared.payload)
      if (result instanceof Promise) result = await result
      assertValid(result, prepared.topic, source, index)
    }
    out[i] = finishMessage(outbox, prepared, source, index)
  }
  return out
}

function assertValid(
  result: StandardSchemaV1.Result<unknown>,
  topic: string,
  source: string,
  index: number | undefined,
): void {
  if (result.issues) {
    throw invalidMessage(
      source,
      index,
      `payload does not match the schema of topic ${JSON.stringify(topic)}: ${formatIssues(result.issues)}.`,
    )
  }
}

/**
 * {@link prepareMessages} without awaiting anything: for drivers whose transactions are
 * synchronous (better-sqlite3), where the row must be written before `publish` returns. A topic
 * whose Standard Schema validates asynchronously (its `validate` returns a Promise) cannot be
 * checked there, so it is refused.
 *
 * @param outbox - the outbox definition
 * @param messages - the messages as given to `publish`/`publishMany`
 * @param source - adapter name for error messages, e.g. `'sqlite'`
 * @throws OutboxError `INVALID_MESSAGE` naming the first bad message; `INVALID_CONFIG` when a
 * topic's schema is asynchronous. Nothing is written.
 */
export function prepareMessagesSync(
  outbox: Outbox,
  messages: readonly unknown[],
  source: string,
): PreparedMessage[] {
  const many = messages.length > 1
  const out: PreparedMessage[] = new Array(messages.length)
  for (let i = 0; i < messages.length; i++) {
    const index = many ? i : undefined
    const { prepared, schema } = prepareOne(outbox, messages[i], source, index)
    if (schema) {
      const result = schema['~standard'].validate(prepared.payload)
      if (result instanceof Promise) {
        result.then(undefined, () => {}) // its outcome is moot: no unhandled rejection
        throw new OutboxError(
          'INVALID_CONFIG',
          `${index === undefined ? 'message' : `message #${index}`}: the schema of topic ${JSON.stringify(prepared.topic)} validates asynchronously (its validate() returned a Promise), but this driver's transactions are synchronous, so publish must validate before it returns. Use a synchronous schema for this topic (e.g. no async refinements), or validate the payload yourself before the transaction. Nothing was written.`,
          { source },
        )
      }
      assertValid(result, prepared.topic, source, index)
    }
    out[i] = finishMessage(outbox, prepared, source, index)
  }
  return out
}

/** Throws `INVALID_MESSAGE` unless `messages` is an array (for `publishMany`). */
export function assertMessageArray(messages: unknown, source: string): asserts messages is unknown[] {
  if (!Array.isArray(messages)) {
    throw new OutboxError(
      'INVALID_MESSAGE',
      `publishMany expects an array of messages, got ${formatValue(messages)}. Nothing was written.`,
      { source },
    )
  }
}
