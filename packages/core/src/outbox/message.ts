import { uuidv7 } from 'uuidv7'
import type { Outbox, PublishPayload, TopicName } from './define-outbox.js'
import { OutboxError } from './errors.js'
import { formatValue } from './format-value.js'
import { formatIssues, type StandardSchemaV1 } from './standard-schema.js'

/** Fields every published message may carry besides `topic` and `payload`. */
export interface MessageOptions {
  /** Aggregate / ordering key (e.g. the order id). Strings; numbers and bigints are stringified. */
  key?: string | number | bigint | null
  /** String-to-string metadata (tenant, trace context, ...). */
  headers?: Record<string, string>
  /** Producer-side deduplication: a second publish with the same key, while the first row exists, is a no-op. */
  dedupKey?: string | null
  /** Not delivered before `now() + delayMs` (database clock). Default 0. */
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

const MAX_TOPIC = 255
const MAX_KEY = 1024
// A JSON-escaped NUL (\u0000) preceded by an even number of backslashes: PostgreSQL's jsonb and text reject NUL.
const ESCAPED_NUL = /(?<!\\)(?:\\\\)*\\u0000/

function invalid(source: string, index: number | undefined, what: string): OutboxError {
  const where = index === undefined ? 'message' : `message #${index}`
  return new OutboxError('INVALID_MESSAGE', `${where}: ${what} Nothing was written.`, { source })
}

function jsonReplacer(this: unknown, _key: string, value: unknown): unknown {
  switch (typeof value) {
    case 'function':
      throw new TypeError('a function is not JSON')
    case 'symbol':
      throw new TypeError('a symbol is not JSON')
    case 'bigint':
      throw new TypeError('a BigInt is not JSON (convert it to a string or number)')
    case 'number':
      if (!Number.isFinite(value))
        throw new TypeError(`${value} is not JSON (NaN and Infinity would become null)`)
      return value
    case 'undefined':
      if (Array.isArray(this))
        throw new TypeError('undefined inside an array is not JSON (it would become null)')
      return value
    case 'object':
      if (value instanceof Map || value instanceof Set) {
        throw new TypeError(`a ${value.constructor.name} is not JSON (it would become {})`)
      }
      return value
    default:
      return value
  }
}

/**
 * Strict JSON encoding for payloads: refuses what `JSON.stringify` would silently drop or change
 * (functions, symbols, NaN/Infinity, undefined in arrays, Map/Set), BigInt and cycles.
 * Returns the JSON text or throws a `TypeError` describing the first problem.
 */
export function encodeJson(value: unknown): string {
  const text = JSON.stringify(value, jsonReplacer)
  if (text === undefined) throw new TypeError(`${formatValue(value)} is not JSON`)
  return text
}

function prepareOne(
  outbox: Outbox,
  raw: unknown,
  source: string,
  index: number | undefined,
): { prepared: Omit<PreparedMessage, 'payload'> & { payload: unknown }; schema?: StandardSchemaV1 } {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw invalid(source, index, `expected an object { topic, payload, ... }, got ${formatValue(raw)}.`)
  }
  const msg = raw as Record<string, unknown>
  const topic = msg.topic
  if (typeof topic !== 'string' || topic.length === 0 || topic.length > MAX_TOPIC) {
    throw invalid(
      source,
      index,
      `topic must be a non-empty string of at most ${MAX_TOPIC} characters, got ${formatValue(topic)}.`,
    )
  }
  if (topic.includes('\u0000')) throw invalid(source, index, 'topic contains a NUL character.')
  let schema: StandardSchemaV1 | undefined
  if (outbox.topics) {
    schema = (outbox.topics as Record<string, StandardSchemaV1>)[topic]
    if (!schema || !Object.hasOwn(outbox.topics, topic)) {
      const known = [...outbox.topicNames].slice(0, 10).join(', ')
      throw invalid(
        source,
        index,
        `unknown topic ${JSON.stringify(topic)}: this outbox defines ${known}. Add it to defineOutbox({ topics }).`,
      )
    }
  }
  if (!('payload' in msg) || msg.payload === undefined) {
    throw invalid(source, index, 'payload is missing: pass a JSON-serialisable value (null is allowed).')
  }
  let key: string | null = null
  if (msg.key !== undefined && msg.key !== null) {
    if (typeof msg.key === 'string') key = msg.key
    else if ((typeof msg.key === 'number' && Number.isFinite(msg.key)) || typeof msg.key === 'bigint')
      key = String(msg.key)
    else
      throw invalid(source, index, `key must be a string (or a finite number), got ${formatValue(msg.key)}.`)
    if (key.length > MAX_KEY || key.includes('\u0000')) {
      throw invalid(source, index, `key must be at most ${MAX_KEY} characters with no NUL character.`)
    }
  }
  if (outbox.orderedTopics.has(topic) && key === null) {
    throw invalid(source, index, `topic ${JSON.stringify(topic)} is ordered, so every message needs a key.`)
  }
  let headers = '{}'
  if (msg.headers !== undefined && msg.headers !== null) {
    const h = msg.headers
    if (
      typeof h !== 'object' ||
      Array.isArray(h) ||
      (Object.getPrototypeOf(h) !== Object.prototype && Object.getPrototypeOf(h) !== null)
    ) {
      throw invalid(source, index, `headers must be a plain object of string values, got ${formatValue(h)}.`)
    }
    for (const [k, v] of Object.entries(h)) {
      if (typeof v !== 'string') {
        throw invalid(source, index, `headers[${JSON.stringify(k)}] must be a string, got ${formatValue(v)}.`)
      }
      if (k.includes('\u0000') || v.includes('\u0000')) {
        throw invalid(
          source,
          index,
          `headers[${JSON.stringify(k)}] contains a NUL character, which PostgreSQL cannot store.`,
        )
      }
    }
    headers = JSON.stringify(h)
    if (headers.length * 3 > outbox.maxPayloadBytes && Buffer.byteLength(headers) > outbox.maxPayloadBytes) {
      throw invalid(
        source,
        index,
        `headers are ${Buffer.byteLength(headers)} bytes of JSON, over maxPayloadBytes (${outbox.maxPayloadBytes}).`,
      )
    }
  }
  let dedupKey: string | null = null
  if (msg.dedupKey !== undefined && msg.dedupKey !== null) {
    if (typeof msg.dedupKey !== 'string' || msg.dedupKey.length === 0 || msg.dedupKey.length > MAX_KEY) {
      throw invalid(
        source,
        index,
        `dedupKey must be a non-empty string of at most ${MAX_KEY} characters, got ${formatValue(msg.dedupKey)}.`,
      )
    }
    if (msg.dedupKey.includes('\u0000')) throw invalid(source, index, 'dedupKey contains a NUL character.')
    dedupKey = msg.dedupKey
  }
  let delayMs = 0
  if (msg.delayMs !== undefined && msg.delayMs !== null) {
    const d = msg.delayMs
    if (typeof d !== 'number' || !Number.isFinite(d) || d < 0) {
      throw invalid(source, index, `delayMs must be a finite number >= 0, got ${formatValue(d)}.`)
    }
    delayMs = d
  }
  return {
    prepared: { id: uuidv7(), topic, key, payload: msg.payload, headers, delayMs, dedupKey },
    ...(schema ? { schema } : {}),
  }
}

function finish(
  outbox: Outbox,
  p: Omit<PreparedMessage, 'payload'> & { payload: unknown },
  source: string,
  index: number | undefined,
): PreparedMessage {
  let payload: string
  try {
    payload = encodeJson(p.payload)
  } catch (err) {
    throw invalid(source, index, `payload is not JSON-serialisable: ${(err as Error).message}.`)
  }
  if (payload.length * 3 > outbox.maxPayloadBytes && Buffer.byteLength(payload) > outbox.maxPayloadBytes) {
    throw invalid(
      source,
      index,
      `payload is ${Buffer.byteLength(payload)} bytes of JSON, over maxPayloadBytes (${outbox.maxPayloadBytes}). Store large data elsewhere and publish a reference, or raise maxPayloadBytes in defineOutbox.`,
    )
  }
  if (payload.includes('\\u0000') && ESCAPED_NUL.test(payload)) {
    throw invalid(
      source,
      index,
      'payload contains a NUL character (\\u0000), which PostgreSQL jsonb cannot store.',
    )
  }
  return { ...p, payload }
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
    out[i] = finish(outbox, prepared, source, index)
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
    throw invalid(
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
    out[i] = finish(outbox, prepared, source, index)
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
