import type { Outbox } from '../outbox/define-outbox.js'
import { OutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'
import { assertKnownOptions, positiveInt, positiveMs } from '../outbox/options.js'
import type { StandardSchemaV1 } from '../outbox/standard-schema.js'
import type { ClaimRequest, OutboxBackend } from '../protocol/backend.js'
import type { Handler } from './handler-types.js'
import type { RelayOptions } from './relay-types.js'
import { type ResolvedRetryPolicy, resolveRetryPolicy } from './retry.js'

/** Default `concurrency` (docs/performance.md#defaults). */
export const DEFAULT_CONCURRENCY = 1_000
/** Default `batchSize`. */
export const DEFAULT_BATCH_SIZE = 500

/** Every option of {@link RelayOptions}: anything else is a typo the relay refuses. */
const RELAY_OPTION_NAMES = [
  'backend',
  'handlers',
  'concurrency',
  'batchSize',
  'maxPendingOutcomes',
  'pollIntervalMs',
  'leaseMs',
  'heartbeatMs',
  'maxHandlerMs',
  'maxAttempts',
  'retry',
  'notify',
  'keepDelivered',
  'graceMs',
  'slotWarnBytes',
  'logger',
  'telemetry',
] as const satisfies readonly (keyof RelayOptions<Outbox>)[]
// Fails to compile when RelayOptions gains an option the list above lacks.
type MissingOptionName = Exclude<keyof RelayOptions<Outbox>, (typeof RELAY_OPTION_NAMES)[number]>
const everyOptionListed: MissingOptionName extends never ? true : MissingOptionName = true

/** A relay's options, validated, with the defaults filled in. */
export interface ResolvedRelayOptions {
  readonly backend: OutboxBackend
  readonly handlers: ReadonlyMap<string, Handler>
  /** The topics this relay claims: those it has handlers for. */
  readonly topics: readonly string[]
  readonly schemas: Readonly<Record<string, StandardSchemaV1>> | undefined
  readonly concurrency: number
  readonly batchSize: number
  readonly maxPendingOutcomes: number
  readonly pollIntervalMs: number
  readonly leaseMs: number
  readonly heartbeatMs: number | false
  readonly maxHandlerMs: number
  readonly maxAttempts: number
  readonly retry: ResolvedRetryPolicy
  readonly notify: boolean
  readonly keepDelivered: boolean
  readonly graceMs: number
  /** Set when some of the topics are ordered: claim only each key's head. */
  readonly ordering: ClaimRequest['ordering']
  /** Read the outbox's replication slot (`transport: 'wal'` and a topic that can travel in the WAL). */
  readonly wal: boolean
  readonly slotWarnBytes: number
}

function invalid(message: string): OutboxError {
  return new OutboxError('INVALID_CONFIG', message, { source: 'relay' })
}

/**
 * Validates `createRelay`'s options against the outbox and fills in the defaults.
 *
 * @throws OutboxError `INVALID_CONFIG` naming the option that is wrong (an unknown name with the
 * closest valid one), a backend that is not one, or a handler for an unknown topic.
 */
export function resolveRelayOptions(outbox: Outbox, options: RelayOptions<Outbox>): ResolvedRelayOptions {
  void everyOptionListed
  if (!options || typeof options !== 'object') {
    throw invalid(`createRelay expects an options object, got ${formatValue(options)}.`)
  }
  assertKnownOptions(options, RELAY_OPTION_NAMES, { source: 'relay', what: 'createRelay option' })
  const backend = options.backend
  if (!backend || typeof backend.claim !== 'function' || typeof backend.settle !== 'function') {
    throw invalid(`backend must be an OutboxBackend (e.g. pgBackend(...)), got ${formatValue(backend)}.`)
  }
  const handlers = resolveHandlers(outbox, options.handlers)
  const topics = [...handlers.keys()]
  const leaseMs = positiveMs('leaseMs', options.leaseMs, 30_000, 'relay')
  return {
    backend,
    handlers,
    topics,
    schemas: (outbox.topics ?? undefined) as Record<string, StandardSchemaV1> | undefined,
    ...slotOptions(options),
    pollIntervalMs: positiveMs('pollIntervalMs', options.pollIntervalMs, 1_500, 'relay'),
    leaseMs,
    ...heartbeatOptions(options, backend, leaseMs),
    maxAttempts: positiveInt('maxAttempts', options.maxAttempts, 10, 'relay'),
    retry: resolveRetryPolicy(options.retry),
    notify: options.notify ?? true,
    keepDelivered: options.keepDelivered ?? false,
    graceMs: positiveMs('graceMs', options.graceMs, 10_000, 'relay'),
    // Ordered topics among this relay's: claim only the head of each key (docs/ordering.md).
    ordering: topics.some((t) => outbox.orderedTopics.has(t))
      ? { continueAfterDead: [...outbox.deadLetterContinues] }
      : undefined,
    ...walOptions(outbox, options, backend, topics),
  }
}

/** Whether the relay reads the slot: only with `transport: 'wal'` and a topic that is not ordered (those stay in the table). */
function walOptions(
  outbox: Outbox,
  options: RelayOptions<Outbox>,
  backend: OutboxBackend,
  topics: readonly string[],
): { wal: boolean; slotWarnBytes: number } {
  const slotWarnBytes = positiveInt('slotWarnBytes', options.slotWarnBytes, 1024 ** 3, 'relay')
  const wal = outbox.transport === 'wal' && topics.some((t) => !outbox.orderedTopics.has(t))
  if (wal && !backend.wal) {
    throw new OutboxError(
      'WAL_UNAVAILABLE',
      `transport 'wal' needs a backend that reads a replication slot, and ${backend.name} does not${backend.dialect === 'postgres' ? ' (PGlite cannot stream one)' : ` (${backend.dialect} has no logical replication)`}. Use pgBackend (@outboxkit/pg) or postgresJsBackend (@outboxkit/postgres-js) on PostgreSQL 14+ with wal_level = logical, or transport 'table'. See docs/wal.md.`,
      { source: 'relay' },
    )
  }
  return { wal, slotWarnBytes }
}

function resolveHandlers(outbox: Outbox, given: RelayOptions<Outbox>['handlers']): Map<string, Handler> {
  const handlers = new Map<string, Handler>()
  for (const [topic, handler] of Object.entries(given ?? {})) {
    if (handler === undefined) continue
    if (typeof handler !== 'function') {
      throw invalid(`handlers[${JSON.stringify(topic)}] must be a function, got ${formatValue(handler)}.`)
    }
    if (outbox.topics && !outbox.topicNames.has(topic)) {
      const known = [...outbox.topicNames].join(', ')
      throw invalid(
        `handlers[${JSON.stringify(topic)}] is for a topic this outbox does not define. Known topics: ${known}.`,
      )
    }
    handlers.set(topic, handler as Handler)
  }
  if (handlers.size === 0) throw invalid('handlers is empty: give at least one topic handler.')
  return handlers
}

function slotOptions(options: RelayOptions<Outbox>) {
  const maxPendingOutcomes = options.maxPendingOutcomes ?? 0
  if (!Number.isInteger(maxPendingOutcomes) || maxPendingOutcomes < 0) {
    throw invalid(`maxPendingOutcomes must be an integer >= 0, got ${formatValue(maxPendingOutcomes)}.`)
  }
  return {
    concurrency: positiveInt('concurrency', options.concurrency, DEFAULT_CONCURRENCY, 'relay'),
    batchSize: positiveInt('batchSize', options.batchSize, DEFAULT_BATCH_SIZE, 'relay'),
    maxPendingOutcomes,
  }
}

function heartbeatOptions(
  options: RelayOptions<Outbox>,
  backend: OutboxBackend,
  leaseMs: number,
): { heartbeatMs: number | false; maxHandlerMs: number } {
  const heartbeatMs: number | false =
    options.heartbeatMs === false || typeof backend.extendLease !== 'function'
      ? false
      : positiveMs('heartbeatMs', options.heartbeatMs, leaseMs / 3, 'relay')
  if (heartbeatMs !== false && heartbeatMs > leaseMs / 2) {
    throw invalid(
      `heartbeatMs (${heartbeatMs}) must be at most half of leaseMs (${leaseMs}) so an extension lands before the lease lapses, or false to turn the lease heartbeat off.`,
    )
  }
  const maxHandlerMs = options.maxHandlerMs ?? 5 * leaseMs
  if (typeof maxHandlerMs !== 'number' || !(maxHandlerMs > 0)) {
    throw invalid(
      `maxHandlerMs must be a number of milliseconds > 0 (Infinity for no bound), got ${formatValue(maxHandlerMs)}.`,
    )
  }
  return { heartbeatMs, maxHandlerMs }
}
