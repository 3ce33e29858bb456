import type { BlockedKey, DeadMessage } from '@outboxkit/core'

/** A dead message as the API returns it: dates as ISO text, the cursor and the trace id added. */
export interface DeadMessageJson {
  readonly id: string
  readonly topic: string
  readonly key: string | null
  readonly payload: unknown
  readonly headers: Readonly<Record<string, string>>
  readonly attempts: number
  readonly lastError: string | null
  readonly createdAt: string
  readonly deadAt: string
  /** The W3C trace id of the publishing span, from the `traceparent` header; `null` when none. */
  readonly traceId: string | null
  /** Pass as `after` to get the page after this message. */
  readonly cursor: string
}

/** The W3C trace id in a `traceparent` header, or `null`. */
export function traceIdOf(headers: Readonly<Record<string, string>>): string | null {
  const tp = headers && typeof headers === 'object' ? headers.traceparent : undefined
  const m = typeof tp === 'string' ? /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(tp) : null
  return m ? m[1]! : null
}

/** The page cursor of a dead message: its death time in ms and its id. */
export function cursorOf(m: Pick<DeadMessage, 'id' | 'deadAt'>): string {
  return `${m.deadAt.getTime()}_${m.id}`
}

/** A {@link DeadMessage} as JSON. */
export function deadJson(m: DeadMessage): DeadMessageJson {
  return {
    id: m.id,
    topic: m.topic,
    key: m.key,
    payload: m.payload,
    headers: m.headers,
    attempts: m.attempts,
    lastError: m.lastError,
    createdAt: m.createdAt.toISOString(),
    deadAt: m.deadAt.toISOString(),
    traceId: traceIdOf(m.headers),
    cursor: cursorOf(m),
  }
}

/** A {@link BlockedKey} as JSON. */
export function blockedJson(b: BlockedKey) {
  return {
    key: b.key,
    reason: b.reason,
    waiting: b.waiting,
    head: {
      id: b.head.id,
      topic: b.head.topic,
      attempts: b.head.attempts,
      lastError: b.head.lastError,
      createdAt: b.head.createdAt.toISOString(),
      since: b.head.since.toISOString(),
    },
  }
}
