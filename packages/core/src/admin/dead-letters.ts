import type { Outbox } from '../outbox/define-outbox.js'
import { OutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'
import type { DeadRow, OutboxBackend } from '../protocol/backend.js'
import { adminBackend, deadSearch, isUuid, messageSelection, pageLimit, stringList } from './checks.js'

/** A dead-lettered message as {@link listDead} returns it. */
export interface DeadMessage {
  readonly id: string
  readonly topic: string
  readonly key: string | null
  readonly payload: unknown
  readonly headers: Readonly<Record<string, string>>
  /** Deliveries used (the last one failed or never settled). */
  readonly attempts: number
  /** The handler's error message, the `Cancel` reason, or why the claim gave up. */
  readonly lastError: string | null
  readonly createdAt: Date
  /** When the message was dead-lettered. */
  readonly deadAt: Date
}

/** Options of {@link listDead}. */
export interface ListDeadOptions {
  /**
   * Only these topics.
   *
   * @defaultValue any topic
   */
  topics?: readonly string[]
  /**
   * At most this many messages (1 to 10 000).
   *
   * @defaultValue `100`
   */
  limit?: number
  /**
   * The next page: pass the last message of the previous page. Pages are sorted newest death
   * first, by the death time (to the millisecond) then id, so no message is skipped or repeated
   * between pages, even while relays run or messages are redriven or discarded meanwhile.
   *
   * @example
   * ```ts
   * for (let page = await listDead(outbox, backend); page.length > 0; ) {
   *   for (const m of page) console.log(m.id, m.lastError)
   *   page = await listDead(outbox, backend, { after: page.at(-1) })
   * }
   * ```
   *
   * @defaultValue none: the first page
   */
  after?: Pick<DeadMessage, 'id' | 'deadAt'>
  /**
   * Only the messages this text finds: the message whose id it is, messages whose key or topic it
   * is exactly, and messages whose last error contains it (ASCII case-insensitively). The
   * statement reads dead rows only.
   *
   * @example
   * ```ts
   * await listDead(outbox, backend, { search: 'timeout' })
   * ```
   *
   * @defaultValue none: every dead message
   */
  search?: string
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

function toDeadMessage(r: DeadRow): DeadMessage {
  return {
    id: r.id,
    topic: r.topic,
    key: r.key,
    payload: parseJson(r.payload),
    headers: parseJson(r.headers) as Record<string, string>,
    attempts: r.attempts,
    lastError: r.lastError,
    createdAt: new Date(r.createdAtMs),
    deadAt: new Date(r.deadAtMs),
  }
}

/**
 * Lists dead-lettered messages with their `last_error`, newest death first, in one statement;
 * `topics` and `search` narrow it, `after` pages it.
 */
export async function listDead(
  outbox: Outbox<any>,
  backend: OutboxBackend,
  options: ListDeadOptions = {},
): Promise<DeadMessage[]> {
  const can = adminBackend('listDead', {
    outbox,
    backend,
    member: 'listDead',
    options,
    known: ['topics', 'limit', 'after', 'search'],
  })
  const topics = stringList('listDead', 'topics', options.topics)
  const limit = pageLimit('listDead', options.limit)
  const search = deadSearch('listDead', options.search)
  const after = options.after
  if (
    after !== undefined &&
    (!after || !isUuid(after.id) || !(after.deadAt instanceof Date) || Number.isNaN(after.deadAt.getTime()))
  ) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `listDead after must be the last message of the previous page (with its id and deadAt), got ${formatValue(after)}.`,
    )
  }
  const rows = await can.listDead({
    table: outbox.table,
    topics,
    limit,
    after: after ? { deadAtMs: after.deadAt.getTime(), id: after.id } : undefined,
    search,
  })
  return rows.map(toDeadMessage)
}

/** Options of {@link discard}. */
export interface DiscardOptions {
  /**
   * Only these message ids.
   *
   * @defaultValue any id
   */
  ids?: readonly string[]
  /**
   * Only these topics.
   *
   * @defaultValue any topic
   */
  topics?: readonly string[]
}

/**
 * Deletes dead-lettered messages for good (by ids, by topics, or, without options, all of them),
 * in one statement. Never touches pending, processing or delivered rows. Returns how many.
 */
export async function discard(
  outbox: Outbox<any>,
  backend: OutboxBackend,
  options: DiscardOptions = {},
): Promise<number> {
  const can = adminBackend('discard', {
    outbox,
    backend,
    member: 'discard',
    options,
    known: ['ids', 'topics'],
  })
  return can.discard({ table: outbox.table, ...messageSelection('discard', options) })
}
