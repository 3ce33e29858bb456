import { assertOutbox } from '../outbox/define-outbox.js'
import { OutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'
import { assertKnownOptions } from '../outbox/options.js'
import type { OutboxBackend } from '../protocol/backend.js'

// The checks every admin function runs on its arguments before it reaches the backend.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** True when `id` is a UUID string (any version), as message ids are. */
export function isUuid(id: unknown): id is string {
  return typeof id === 'string' && UUID.test(id)
}

/** Throws `INVALID_CONFIG` unless `backend` is an {@link OutboxBackend} (it can `migrate`). */
export function assertBackend(backend: unknown, what: string): asserts backend is OutboxBackend {
  if (!backend || typeof (backend as OutboxBackend).migrate !== 'function') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${what} needs an OutboxBackend (e.g. pgBackend(...)) as second argument, got ${formatValue(backend)}.`,
    )
  }
}

/**
 * Throws `INVALID_CONFIG` unless `backend` is an {@link OutboxBackend} that has the optional
 * `member` (stats, dead letters, blocked keys).
 */
export function assertBackendCan<K extends 'stats' | 'listDead' | 'countDead' | 'discard' | 'blockedKeys'>(
  backend: unknown,
  member: K,
  what: string,
): asserts backend is OutboxBackend & Required<Pick<OutboxBackend, K>> {
  if (!backend || typeof (backend as OutboxBackend).claim !== 'function') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${what} needs an OutboxBackend (e.g. pgBackend(...)) as second argument, got ${formatValue(backend)}.`,
    )
  }
  if (typeof (backend as OutboxBackend)[member] !== 'function') {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${what} is not supported by the ${(backend as OutboxBackend).name} backend (it has no ${member}()). Use a PostgreSQL backend (pg, postgres.js, PGlite).`,
    )
  }
}

/**
 * Throws `INVALID_CONFIG` unless `options` is an object whose every key is in `known`: a typo
 * (`olderThan` for `olderThanMs`) must not widen what an admin command deletes or moves.
 */
export function assertAdminOptions(options: unknown, known: readonly string[], what: string): void {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new OutboxError('INVALID_CONFIG', `${what} options must be an object, got ${formatValue(options)}.`)
  }
  assertKnownOptions(options, known, { source: 'core', what })
}

/** `list` as a string array, `undefined` when absent; throws `INVALID_CONFIG` for anything else. */
export function stringList(what: string, name: string, list: unknown): readonly string[] | undefined {
  if (list === undefined) return undefined
  if (!Array.isArray(list) || list.some((v) => typeof v !== 'string')) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${what} ${name} must be an array of strings, got ${formatValue(list)}.`,
    )
  }
  return list
}

/** The `limit` of a listing: an integer from 1 to 10 000, default 100. Throws `INVALID_CONFIG`. */
export function pageLimit(what: string, value: unknown): number {
  const limit = value ?? 100
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${what} limit must be an integer from 1 to 10000, got ${formatValue(limit)}.`,
    )
  }
  return limit
}

/**
 * The checks of an admin function every backend serves, in order: the outbox, the backend (see
 * {@link assertBackend}), then its `options` (see {@link assertAdminOptions}).
 */
export function assertAdminCall(
  what: string,
  call: { outbox: unknown; backend: unknown; options: unknown; known: readonly string[] },
): void {
  assertOutbox(call.outbox, what)
  assertBackend(call.backend, what)
  assertAdminOptions(call.options, call.known, what)
}

/**
 * The checks of an admin function that needs the backend's optional `member`, in order: the
 * outbox, the backend (see {@link assertBackendCan}), then its `options` (see
 * {@link assertAdminOptions}). Returns the backend, typed with `member`.
 */
export function adminBackend<K extends 'stats' | 'listDead' | 'countDead' | 'discard' | 'blockedKeys'>(
  what: string,
  call: { outbox: unknown; backend: unknown; member: K; options: unknown; known: readonly string[] },
): OutboxBackend & Required<Pick<OutboxBackend, K>> {
  assertOutbox(call.outbox, what)
  const { backend } = call
  assertBackendCan(backend, call.member, what)
  assertAdminOptions(call.options, call.known, what)
  return backend
}

/**
 * The `search` of a dead-letter listing: `undefined`, or a string of 1 to 1024 characters (an id,
 * a key, a topic, or a part of the last error). Throws `INVALID_CONFIG` for anything else.
 */
export function deadSearch(what: string, search: unknown): string | undefined {
  if (search === undefined) return undefined
  if (typeof search !== 'string' || search.length === 0 || search.length > 1024) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `${what} search must be a string of 1 to 1024 characters (an id, a key, a topic or a part of the last error), got ${formatValue(search)}.`,
    )
  }
  return search
}

/** The `ids` (UUID strings) and `topics` that select the messages of redrive and discard; throws `INVALID_CONFIG`. */
export function messageSelection(
  what: string,
  options: { ids?: unknown; topics?: unknown },
): { ids: readonly string[] | undefined; topics: readonly string[] | undefined } {
  const ids = stringList(what, 'ids', options.ids)
  const topics = stringList(what, 'topics', options.topics)
  if (ids?.some((id) => !isUuid(id))) {
    throw new OutboxError('INVALID_CONFIG', `${what} ids must be UUID strings.`)
  }
  return { ids, topics }
}
