import { OutboxError } from './errors.js'
import { formatValue } from './format-value.js'
import { assertKnownOptions, isPlainObject, positiveInt } from './options.js'
import { parseOrderedTopics } from './ordered-topics.js'
import type { StandardSchemaV1 } from './standard-schema.js'

/** A map of topic name to the Standard Schema (zod, valibot, arktype, ...) of its payload. */
export type TopicSchemas = Record<string, StandardSchemaV1>

/** A validated table reference. Identifiers are checked, then always quoted, never spliced raw. */
export interface TableRef {
  /** The schema part of `schema.table`, or `null` to follow the connection's `search_path`. */
  readonly schema: string | null
  /** The table name. */
  readonly name: string
  /** The table as written by the user, e.g. `'outbox'` or `'app.outbox'`. */
  readonly display: string
}

/** One ordered topic with options, in {@link DefineOutboxOptions.orderedTopics}. */
export interface OrderedTopicOptions {
  /** The topic name. */
  topic: string
  /**
   * What a dead-lettered message of this topic does to its key. `'block'` (default): later
   * messages of the key wait until it is redriven or discarded, so order is never broken.
   * `'continue'`: later messages proceed and the dead one is skipped (redriving it later delivers
   * it out of order).
   *
   * @defaultValue `'block'`
   */
  onDeadLetter?: 'block' | 'continue'
}

/** Options of {@link defineOutbox}. */
export interface DefineOutboxOptions<TTopics extends TopicSchemas | undefined = undefined> {
  /**
   * The outbox table: `'outbox'` (the default) or `'schema.table'`. Each part must be a plain SQL
   * identifier (letters, digits, `_`, not starting with a digit, at most 63 bytes).
   *
   * @defaultValue `'outbox'`
   */
  table?: string
  /**
   * A Standard Schema per topic. With `topics`, publishing an unknown topic or a payload that fails
   * its schema throws `OutboxError('INVALID_MESSAGE')` before anything is written, and a stored
   * payload that fails its schema at delivery is dead-lettered at once.
   *
   * @defaultValue none: any topic name, payloads unchecked
   */
  topics?: TTopics
  /**
   * Ordered topics: their messages that share a `key` are delivered one at a time, in the order
   * their publishing transactions committed, across every ordered topic of this outbox; different
   * keys still run in parallel on any number of relays. Every message of an ordered topic needs a
   * `key`. A failing message holds its key while it retries; once dead-lettered it blocks its key
   * until it is redriven or discarded, unless its topic is given as
   * `{ topic, onDeadLetter: 'continue' }`. See docs/ordering.md for the semantics and the cost.
   *
   * @example
   * ```ts
   * defineOutbox({ orderedTopics: ['ledger.entry', { topic: 'email.send', onDeadLetter: 'continue' }] })
   * ```
   *
   * @defaultValue `[]`: no ordered topic
   */
  orderedTopics?: readonly (string | OrderedTopicOptions)[]
  /**
   * Largest accepted payload, in bytes of its JSON text.
   *
   * @defaultValue `10_485_760` (10 MiB)
   */
  maxPayloadBytes?: number
  /**
   * Whether the publish statement queues a NOTIFY wake-up for relays (in the same statement and
   * transaction, so it costs no round trip). Default `true`. Turn it off when relays poll often
   * enough, or when many producers commit concurrently: PostgreSQL serialises the commits of
   * transactions that queued a NOTIFY (see docs/how-it-works.md, "The cost of NOTIFY").
   *
   * @defaultValue `true`
   */
  notify?: boolean
  /**
   * How messages travel from `publish` to the relay. `'table'` (default): a row in the outbox
   * table. `'wal'` (PostgreSQL 14+ with `wal_level = logical`): a message written into the
   * write-ahead log in the caller's transaction (`pg_logical_emit_message`), read by the relay from
   * a logical replication slot that `migrate` creates; messages with a `dedupKey`, a `delayMs` or
   * an ordered topic still take the table, and a message whose handler fails moves into it. See
   * docs/wal.md.
   *
   * @defaultValue `'table'`
   */
  transport?: 'table' | 'wal'
}

/**
 * An outbox definition: which table, which topics, and how their payloads are typed. Create one
 * with {@link defineOutbox}, share it between your producers (`publish`) and your relay.
 */
export interface Outbox<TTopics extends TopicSchemas | undefined = TopicSchemas | undefined> {
  /** Brand, so adapters can recognise an outbox definition. */
  readonly kind: 'outboxkit.outbox'
  /** The validated table. */
  readonly table: TableRef
  /** The per-topic schemas, when given. */
  readonly topics: TTopics
  /** Topic names that have a schema (empty when `topics` was not given). */
  readonly topicNames: ReadonlySet<string>
  /** Ordered topics (see {@link DefineOutboxOptions.orderedTopics}). */
  readonly orderedTopics: ReadonlySet<string>
  /** The ordered topics given with `onDeadLetter: 'continue'`: their dead messages do not block their key. */
  readonly deadLetterContinues: ReadonlySet<string>
  /** Largest accepted payload in bytes. */
  readonly maxPayloadBytes: number
  /** The LISTEN/NOTIFY channel the publish statement wakes and the relay listens on. */
  readonly channel: string
  /** Whether publish queues a NOTIFY on {@link Outbox.channel}. */
  readonly notify: boolean
  /** How messages travel (see {@link DefineOutboxOptions.transport}). */
  readonly transport: 'table' | 'wal'
}

/** The topic names an outbox accepts: its schema keys, or any string without `topics`. */
export type TopicName<O> =
  O extends Outbox<infer T> ? (T extends TopicSchemas ? keyof T & string : string) : string

/** The payload type `publish` accepts for topic `K` (the schema's input type). */
export type PublishPayload<O, K extends string> =
  O extends Outbox<infer T> ? (T extends TopicSchemas ? StandardSchemaV1.InferInput<T[K]> : unknown) : unknown

/** The payload type a handler of topic `K` receives (the schema's output type). */
export type HandlerPayload<O, K extends string> =
  O extends Outbox<infer T>
    ? T extends TopicSchemas
      ? StandardSchemaV1.InferOutput<T[K]>
      : unknown
    : unknown

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/
const DEFAULT_MAX_PAYLOAD = 10 * 1024 * 1024
/** Every option of {@link defineOutbox}: any other name is refused. */
const OUTBOX_OPTIONS = [
  'table',
  'topics',
  'orderedTopics',
  'maxPayloadBytes',
  'notify',
  'transport',
] as const satisfies readonly (keyof DefineOutboxOptions)[]

/** Validates `'table'` or `'schema.table'` and returns its parts. Throws `INVALID_CONFIG`. */
export function parseTableName(table: unknown): TableRef {
  if (typeof table !== 'string' || table.length === 0) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `table must be a non-empty string like 'outbox' or 'app.outbox', got ${formatValue(table)}.`,
    )
  }
  const parts = table.split('.')
  const ok = parts.length <= 2 && parts.every((p) => IDENT.test(p) && Buffer.byteLength(p) <= 63)
  if (!ok) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `table ${JSON.stringify(table)} is not a valid name: use 'table' or 'schema.table', where each part is letters, digits and '_' (not starting with a digit, at most 63 bytes).`,
    )
  }
  return parts.length === 2
    ? { schema: parts[0]!, name: parts[1]!, display: table }
    : { schema: null, name: parts[0]!, display: table }
}

/**
 * Defines an outbox: the table it lives in and, optionally, a Standard Schema per topic that types
 * `publish` payloads and handler messages.
 *
 * @example
 * ```ts
 * export const outbox = defineOutbox({
 *   table: 'outbox',
 *   topics: { 'order.created': z.object({ orderId: z.string() }) },
 * })
 * ```
 * @throws OutboxError `INVALID_CONFIG` when the table name or an option is invalid.
 */
export function defineOutbox<TTopics extends TopicSchemas | undefined = undefined>(
  options: DefineOutboxOptions<TTopics> = {},
): Outbox<TTopics> {
  if (options === null || typeof options !== 'object') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `defineOutbox expects an options object, got ${formatValue(options)}.`,
    )
  }
  assertKnownOptions(options, OUTBOX_OPTIONS, { source: 'core', what: 'defineOutbox' })
  const table = parseTableName(options.table === undefined ? 'outbox' : options.table)
  const topics = options.topics
  if (topics !== undefined) {
    if (!isPlainObject(topics)) {
      throw new OutboxError(
        'INVALID_CONFIG',
        `topics must be a plain object mapping topic name to a Standard Schema, got ${formatValue(topics)}.`,
      )
    }
    for (const [name, schema] of Object.entries(topics)) {
      if (name.length === 0) throw new OutboxError('INVALID_CONFIG', 'topics has an empty topic name.')
      if (!schema || typeof (schema as StandardSchemaV1)['~standard']?.validate !== 'function') {
        throw new OutboxError(
          'INVALID_CONFIG',
          `topics[${JSON.stringify(name)}] is not a Standard Schema (zod, valibot, arktype...): it has no '~standard'.validate.`,
        )
      }
    }
  }
  const maxPayloadBytes = positiveInt('maxPayloadBytes', options.maxPayloadBytes, DEFAULT_MAX_PAYLOAD, 'core')
  if (options.notify !== undefined && typeof options.notify !== 'boolean') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `notify must be true or false, got ${formatValue(options.notify)}.`,
    )
  }
  const transport = options.transport ?? 'table'
  if (transport !== 'table' && transport !== 'wal') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `transport must be 'table' or 'wal', got ${formatValue(options.transport)}.`,
    )
  }
  const { ordered, continues } = parseOrderedTopics(options.orderedTopics, topics)
  // Lower case: an unquoted LISTEN folds case, pg_notify does not.
  const channel = `outboxkit_${table.schema ? `${table.schema}_` : ''}${table.name}`
    .toLowerCase()
    .slice(0, 63)
  return Object.freeze({
    kind: 'outboxkit.outbox' as const,
    table: Object.freeze(table),
    topics: topics as TTopics,
    topicNames: new Set(topics ? Object.keys(topics) : []),
    orderedTopics: ordered,
    deadLetterContinues: continues,
    maxPayloadBytes,
    channel,
    notify: options.notify ?? true,
    transport,
  })
}

/** Throws `INVALID_CONFIG` unless `value` is an outbox made by {@link defineOutbox}. */
export function assertOutbox(value: unknown, source: string): asserts value is Outbox {
  if (!value || typeof value !== 'object' || (value as Outbox).kind !== 'outboxkit.outbox') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `expected an outbox made by defineOutbox() as the first argument, got ${formatValue(value)}.`,
      { source },
    )
  }
}
