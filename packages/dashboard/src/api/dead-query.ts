import type { ListDeadOptions } from '@outboxkit/core'
import { apiError } from '../http.js'

/** How many dead messages a bulk action or the count reaches at most. */
export const BULK_CAP = 10_000

/** The filters of the dead-letter listing and of a bulk action: one topic and a search text. */
export interface DeadFilter {
  readonly topic: string | undefined
  readonly q: string | undefined
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** True when `id` is a message id (a UUID). */
export const isMessageId = (id: string): boolean => UUID.test(id)

/** `topic` and `q` from a query string or a JSON body; a 400 response when either is malformed. */
export function deadFilter(topic: unknown, q: unknown): DeadFilter | Response {
  const t = topic === undefined || topic === null || topic === '' ? undefined : topic
  const s = typeof q === 'string' ? q.trim() : q
  const search = s === undefined || s === null || s === '' ? undefined : s
  if (t !== undefined && (typeof t !== 'string' || t.length > 255)) {
    return apiError(400, 'BAD_REQUEST', 'topic must be a topic name of at most 255 characters.')
  }
  if (search !== undefined && (typeof search !== 'string' || search.length > 1024)) {
    return apiError(
      400,
      'BAD_REQUEST',
      'q must be a text of at most 1024 characters (an id, a key, a topic or a part of the error).',
    )
  }
  return { topic: t as string | undefined, q: search as string | undefined }
}

/** The core options of a filter. */
export function filterOptions(f: DeadFilter): Pick<ListDeadOptions, 'topics' | 'search'> {
  return {
    ...(f.topic === undefined ? {} : { topics: [f.topic] }),
    ...(f.q === undefined ? {} : { search: f.q }),
  }
}

/** The page size (`limit`, 1 to 200, default 50) and the cursor (`after`) of a listing, or a 400. */
export function pageOf(
  params: URLSearchParams,
): { limit: number; after: ListDeadOptions['after'] } | Response {
  const limitText = params.get('limit')
  const limit = limitText === null || limitText === '' ? 50 : Number(limitText)
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
    return apiError(
      400,
      'BAD_REQUEST',
      `limit must be an integer from 1 to 200, got ${JSON.stringify(limitText)}.`,
    )
  }
  const afterText = params.get('after')
  if (afterText === null || afterText === '') return { limit, after: undefined }
  const m = /^(\d{1,15})_([0-9a-f-]{36})$/i.exec(afterText)
  if (!m || !isMessageId(m[2]!)) {
    return apiError(400, 'BAD_REQUEST', 'after must be the cursor of the last message of the previous page.')
  }
  return { limit, after: { deadAt: new Date(Number(m[1])), id: m[2]!.toLowerCase() } }
}
