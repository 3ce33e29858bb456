import { countDead, discard, listDead, redrive } from '@outboxkit/core'
import { apiError, json } from '../http.js'
import type { DashboardConfig } from '../options.js'
import { BULK_CAP, type DeadFilter, deadFilter, filterOptions, isMessageId, pageOf } from './dead-query.js'
import { deadJson } from './serialize.js'

/**
 * `GET /api/dead?topic=&q=&limit=&after=`: one page of dead messages, newest death first, the
 * cursor of the next page, and how many match (counted up to {@link BULK_CAP}).
 */
export async function listDeadRoute(config: DashboardConfig, params: URLSearchParams): Promise<Response> {
  const filter = deadFilter(params.get('topic') ?? undefined, params.get('q') ?? undefined)
  if (filter instanceof Response) return filter
  const page = pageOf(params)
  if (page instanceof Response) return page
  const { outbox, backend } = config
  const options = filterOptions(filter)
  const [rows, matching] = await Promise.all([
    listDead(outbox, backend, {
      ...options,
      limit: page.limit + 1,
      ...(page.after ? { after: page.after } : {}),
    }),
    typeof backend.countDead === 'function'
      ? countDead(outbox, backend, { ...options, cap: BULK_CAP + 1 })
      : Promise.resolve(null),
  ])
  const messages = rows.slice(0, page.limit).map(deadJson)
  return json(200, {
    messages,
    next: rows.length > page.limit ? (messages.at(-1)?.cursor ?? null) : null,
    matching: matching === null ? null : Math.min(matching, BULK_CAP),
    matchingCapped: matching !== null && matching > BULK_CAP,
    topic: filter.topic ?? null,
    q: filter.q ?? null,
  })
}

type Action = 'redrive' | 'discard'

async function act(config: DashboardConfig, action: Action, ids: readonly string[]): Promise<number> {
  const { outbox, backend } = config
  let n = 0
  for (let i = 0; i < ids.length; i += 1000) {
    const chunk = ids.slice(i, i + 1000)
    n +=
      action === 'redrive'
        ? await redrive(outbox, backend, { ids: chunk })
        : await discard(outbox, backend, { ids: chunk })
  }
  return n
}

/** `POST /api/dead/{id}/redrive` and `.../discard`: one dead message; 404 when it is not dead. */
export async function actOnOne(config: DashboardConfig, id: string, action: Action): Promise<Response> {
  if (!isMessageId(id))
    return apiError(400, 'BAD_REQUEST', `${JSON.stringify(id)} is not a message id (a UUID).`)
  const n = await act(config, action, [id.toLowerCase()])
  if (n === 0) {
    return apiError(
      404,
      'NOT_FOUND',
      `no dead message has id ${id} (it was redriven, discarded or never died): nothing was changed.`,
    )
  }
  return json(200, { id: id.toLowerCase(), [action === 'redrive' ? 'redriven' : 'discarded']: n })
}

/** The ids of the dead messages a filter matches, at most `BULK_CAP + 1`. */
async function matchingIds(config: DashboardConfig, filter: DeadFilter): Promise<string[]> {
  const ids: string[] = []
  let after: { id: string; deadAt: Date } | undefined
  while (ids.length <= BULK_CAP) {
    const page = await listDead(config.outbox, config.backend, {
      ...filterOptions(filter),
      limit: 1000,
      ...(after ? { after } : {}),
    })
    for (const m of page) ids.push(m.id)
    if (page.length < 1000) break
    after = page.at(-1)
  }
  return ids
}

/**
 * `POST /api/dead/redrive` and `/api/dead/discard` with `{ topic?, q?, expected }`: every dead
 * message the filter matches, when they are still the `expected` count the confirmation showed
 * (else 409 with the new count, nothing changed). At most {@link BULK_CAP} at once.
 */
export async function actOnMatching(
  config: DashboardConfig,
  body: Record<string, unknown>,
  action: Action,
): Promise<Response> {
  const filter = deadFilter(body.topic, body.q)
  if (filter instanceof Response) return filter
  const expected = body.expected
  if (typeof expected !== 'number' || !Number.isInteger(expected) || expected < 0) {
    return apiError(
      400,
      'BAD_REQUEST',
      'expected must be the number of matching messages the confirmation showed.',
    )
  }
  const ids = await matchingIds(config, filter)
  if (ids.length > BULK_CAP) {
    return apiError(
      409,
      'CONFLICT',
      `more than ${BULK_CAP} dead messages match: narrow the search (topic, q) and act again. Nothing was changed.`,
    )
  }
  if (ids.length !== expected) {
    return json(409, {
      error: {
        code: 'CONFLICT',
        message: `[outboxkit] [dashboard] ${ids.length} dead messages match now, not ${expected}: confirm again. Nothing was changed.`,
      },
      matching: ids.length,
    })
  }
  const n = await act(config, action, ids)
  return json(200, { matching: ids.length, [action === 'redrive' ? 'redriven' : 'discarded']: n })
}
