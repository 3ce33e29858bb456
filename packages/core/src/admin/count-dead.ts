import type { Outbox } from '../outbox/define-outbox.js'
import { OutboxError } from '../outbox/errors.js'
import { formatValue } from '../outbox/format-value.js'
import type { OutboxBackend } from '../protocol/backend.js'
import { adminBackend, deadSearch, stringList } from './checks.js'

/** Options of {@link countDead}: the filters of `listDead`, and where to stop counting. */
export interface CountDeadOptions {
  /**
   * Only these topics.
   * @defaultValue any topic
   */
  topics?: readonly string[]
  /**
   * As `ListDeadOptions.search`: an id, a key, a topic, or a part of the last error.
   * @defaultValue none: every dead message
   */
  search?: string
  /**
   * Stop counting at this many (1 to 1 000 000).
   * @defaultValue `10000`
   */
  cap?: number
}

/**
 * Counts the dead-lettered messages `listDead` would list with the same `topics` and `search`,
 * in one read-only statement that stops at `cap`: a result equal to `cap` means "at least".
 * It reads dead rows only, never delivered ones, so a dashboard can show it on every refresh.
 *
 * @example
 * ```ts
 * const n = await countDead(outbox, backend, { search: 'timeout', cap: 10_000 })
 * console.log(n === 10_000 ? '10000+' : n)
 * ```
 */
export async function countDead(
  outbox: Outbox<any>,
  backend: OutboxBackend,
  options: CountDeadOptions = {},
): Promise<number> {
  const can = adminBackend('countDead', {
    outbox,
    backend,
    member: 'countDead',
    options,
    known: ['topics', 'search', 'cap'],
  })
  const topics = stringList('countDead', 'topics', options.topics)
  const search = deadSearch('countDead', options.search)
  const cap = options.cap ?? 10_000
  if (typeof cap !== 'number' || !Number.isInteger(cap) || cap < 1 || cap > 1_000_000) {
    throw new OutboxError(
      'INVALID_CONFIG',
      `countDead cap must be an integer from 1 to 1000000, got ${formatValue(cap)}.`,
    )
  }
  return can.countDead({ table: outbox.table, topics, search, cap })
}
