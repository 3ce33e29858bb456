import { uuidv7 } from 'uuidv7'
import type { Outbox } from './define-outbox.js'
import { OutboxError } from './errors.js'
import { formatValue } from './format-value.js'
import {
  encodeJson,
  isWellFormed,
  jsonHasLoneSurrogate,
  jsonHasNul,
  locateLoneSurrogate,
  loneSurrogateMessage,
} from './json.js'
import type { PreparedMessage } from './message.js'
import { didYouMean } from './options.js'
import type { StandardSchemaV1 } from './standard-schema.js'

// The checks of each field of a message, in the order `prepareMessages` runs them. Nothing here
// reaches a database: a message that fails is refused before any statement is sent, so the
// caller's transaction stays usable.

const MAX_TOPIC = 255
const MAX_KEY = 1024
/** Every field a message may have: any other is refused (a typo such as `delay` would be lost). */
const MESSAGE_FIELDS = ['topic', 'payload', 'key', 'headers', 'dedupKey', 'delayMs'] as const

/** The `INVALID_MESSAGE` error about message `index` (or the only message), ending "Nothing was written." */
export function invalidMessage(source: string, index: number | undefined, what: string): OutboxError {
  const where = index === undefined ? 'message' : `message #${index}`
  return new OutboxError('INVALID_MESSAGE', `${where}: ${what} Nothing was written.`, { source })
}

/** The first own enumerable field of `msg` that is not a message field (one pass, no allocation). */
function unknownField(msg: Record<string, unknown>): string | undefined {
  for (const k in msg) {
    switch (k) {
      case 'topic':
      case 'payload':
      case 'key':
      case 'headers':
      case 'dedupKey':
      case 'delayMs':
        continue
    }
    if (Object.hasOwn(msg, k)) return k
  }
  return undefined
}

/** Throws unless `text` (a topic, key, dedupKey or header) has no NUL character and no lone surrogate. */
function checkText(source: string, index: number | undefined, field: string, text: string): void {
  if (text.includes('\u0000')) {
    throw invalidMessage(source, index, `${field} contains a NUL character, which PostgreSQL cannot store.`)
  }
  if (!isWellFormed(text)) {
    throw invalidMessage(
      source,
      index,
      loneSurrogateMessage(field, locateLoneSurrogate(text, field)?.unit ?? '?'),
    )
  }
}

/**
 * Checks the fields of one message (unknown fields, topic, key, headers, dedupKey, delayMs) and
 * gives it a UUIDv7 id. The payload is checked against its topic's schema by the caller, then
 * encoded by {@link finishMessage}.
 */
export function prepareOne(
  outbox: Outbox,
  raw: unknown,
  source: string,
  index: number | undefined,
): { prepared: Omit<PreparedMessage, 'payload'> & { payload: unknown }; schema?: StandardSchemaV1 } {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw invalidMessage(
      source,
      index,
      `expected an object { topic, payload, ... }, got ${formatValue(raw)}.`,
    )
  }
  const msg = raw as Record<string, unknown>
  const extra = unknownField(msg)
  if (extra !== undefined) {
    throw invalidMessage(
      source,
      index,
      `unknown field ${JSON.stringify(extra)}${didYouMean(extra, MESSAGE_FIELDS)}. A message has ${MESSAGE_FIELDS.join(', ')}.`,
    )
  }
  const topic = msg.topic
  if (typeof topic !== 'string' || topic.length === 0 || topic.length > MAX_TOPIC) {
    throw invalidMessage(
      source,
      index,
      `topic must be a non-empty string of at most ${MAX_TOPIC} characters, got ${formatValue(topic)}.`,
    )
  }
  checkText(source, index, 'topic', topic)
  let schema: StandardSchemaV1 | undefined
  if (outbox.topics) {
    schema = (outbox.topics as Record<string, StandardSchemaV1>)[topic]
    if (!schema || !Object.hasOwn(outbox.topics, topic)) {
      const known = [...outbox.topicNames].slice(0, 10).join(', ')
      throw invalidMessage(
        source,
        index,
        `unknown topic ${JSON.stringify(topic)}: this outbox defines ${known}. Add it to defineOutbox({ topics }).`,
      )
    }
  }
  if (!('payload' in msg) || msg.payload === undefined) {
    throw invalidMessage(
      source,
      index,
      'payload is missing: pass a JSON-serialisable value (null is allowed).',
    )
  }
  let key: string | null = null
  if (msg.key !== undefined && msg.key !== null) {
    if (typeof msg.key !== 'string') {
      throw invalidMessage(
        source,
        index,
        `key must be a string (or null), got ${formatValue(msg.key)}. Convert it yourself, e.g. key: String(order.id).`,
      )
    }
    key = msg.key
    if (key.length > MAX_KEY)
      throw invalidMessage(source, index, `key must be at most ${MAX_KEY} characters.`)
    checkText(source, index, 'key', key)
  }
  if (outbox.orderedTopics.has(topic) && key === null) {
    throw invalidMessage(
      source,
      index,
      `topic ${JSON.stringify(topic)} is ordered, so every message needs a key.`,
    )
  }
  const headers =
    msg.headers === undefined || msg.headers === null
      ? '{}'
      : encodeHeaders(outbox, msg.headers, source, index)
  let dedupKey: string | null = null
  if (msg.dedupKey !== undefined && msg.dedupKey !== null) {
    if (typeof msg.dedupKey !== 'string' || msg.dedupKey.length === 0 || msg.dedupKey.length > MAX_KEY) {
      throw invalidMessage(
        source,
        index,
        `dedupKey must be a non-empty string of at most ${MAX_KEY} characters, got ${formatValue(msg.dedupKey)}.`,
      )
    }
    checkText(source, index, 'dedupKey', msg.dedupKey)
    dedupKey = msg.dedupKey
  }
  let delayMs = 0
  if (msg.delayMs !== undefined && msg.delayMs !== null) {
    const d = msg.delayMs
    if (typeof d !== 'number' || !Number.isFinite(d) || d < 0) {
      throw invalidMessage(source, index, `delayMs must be a finite number >= 0, got ${formatValue(d)}.`)
    }
    delayMs = d
  }
  return {
    prepared: { id: uuidv7(), topic, key, payload: msg.payload, headers, delayMs, dedupKey },
    ...(schema ? { schema } : {}),
  }
}

/** The headers as JSON text: a plain object of strings, no NUL, no lone surrogate, within maxPayloadBytes. */
function encodeHeaders(outbox: Outbox, h: unknown, source: string, index: number | undefined): string {
  if (
    typeof h !== 'object' ||
    h === null ||
    Array.isArray(h) ||
    (Object.getPrototypeOf(h) !== Object.prototype && Object.getPrototypeOf(h) !== null)
  ) {
    throw invalidMessage(
      source,
      index,
      `headers must be a plain object of string values, got ${formatValue(h)}.`,
    )
  }
  for (const [k, v] of Object.entries(h)) {
    const field = `headers[${JSON.stringify(k)}]`
    if (typeof v !== 'string') {
      throw invalidMessage(source, index, `${field} must be a string, got ${formatValue(v)}.`)
    }
    checkText(source, index, `the name of ${field}`, k)
    checkText(source, index, field, v)
  }
  const headers = JSON.stringify(h)
  if (headers.length * 3 > outbox.maxPayloadBytes && Buffer.byteLength(headers) > outbox.maxPayloadBytes) {
    throw invalidMessage(
      source,
      index,
      `headers are ${Buffer.byteLength(headers)} bytes of JSON, over maxPayloadBytes (${outbox.maxPayloadBytes}).`,
    )
  }
  return headers
}

/** Encodes the payload of a message checked by {@link prepareOne} as strict JSON text and checks it. */
export function finishMessage(
  outbox: Outbox,
  p: Omit<PreparedMessage, 'payload'> & { payload: unknown },
  source: string,
  index: number | undefined,
): PreparedMessage {
  let payload: string
  try {
    payload = encodeJson(p.payload)
  } catch (err) {
    throw invalidMessage(source, index, `payload is not JSON-serialisable: ${(err as Error).message}.`)
  }
  if (payload.length * 3 > outbox.maxPayloadBytes && Buffer.byteLength(payload) > outbox.maxPayloadBytes) {
    throw invalidMessage(
      source,
      index,
      `payload is ${Buffer.byteLength(payload)} bytes of JSON, over maxPayloadBytes (${outbox.maxPayloadBytes}). Store large data elsewhere and publish a reference, or raise maxPayloadBytes in defineOutbox.`,
    )
  }
  if (jsonHasNul(payload)) {
    throw invalidMessage(
      source,
      index,
      'payload contains a NUL character (\\u0000), which PostgreSQL jsonb cannot store.',
    )
  }
  if (jsonHasLoneSurrogate(payload)) {
    const found = locateLoneSurrogate(p.payload, 'payload')
    throw invalidMessage(source, index, loneSurrogateMessage(found?.path ?? 'payload', found?.unit ?? '?'))
  }
  return { ...p, payload }
}
