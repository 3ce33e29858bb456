import type { PreparedMessage } from '../../../outbox/message.js'
import type { ClaimedRow } from '../../../protocol/backend.js'

// The content of one WAL message (pg_logical_emit_message): a JSON array of the messages of one
// publish call, each {"id","topic","key","payload","headers","created"}, payload and headers as
// JSON values and created in epoch milliseconds (the publishing process's clock).

/** The content of the WAL message that carries `messages` (one publish or publishMany call). */
export function encodeWalContent(messages: readonly PreparedMessage[], createdMs: number): string {
  let out = '['
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!
    if (i > 0) out += ','
    out += `{"id":${JSON.stringify(m.id)},"topic":${JSON.stringify(m.topic)},"key":${m.key === null ? 'null' : JSON.stringify(m.key)},"payload":${m.payload},"headers":${m.headers},"created":${createdMs}}`
  }
  return `${out}]`
}

interface WalMessageJson {
  id: string
  topic: string
  key: string | null
  payload: unknown
  headers: unknown
  created: number
}

/**
 * The rows carried by one WAL message's content, as the relay delivers them (attempts 1, state
 * `processing`). Content that is not what {@link encodeWalContent} writes yields no row and the
 * reason in `invalid`, so the relay can report it instead of stalling the slot.
 */
export function decodeWalContent(content: string): { rows: ClaimedRow[]; invalid?: string } {
  let parsed: unknown
  try {
    parsed = JSON.parse(content)
  } catch (err) {
    return { rows: [], invalid: `not JSON: ${(err as Error).message}` }
  }
  if (!Array.isArray(parsed)) return { rows: [], invalid: 'not a JSON array' }
  const rows: ClaimedRow[] = []
  for (const m of parsed as WalMessageJson[]) {
    if (!m || typeof m.id !== 'string' || typeof m.topic !== 'string') {
      return { rows: [], invalid: 'an element has no string id and topic' }
    }
    rows.push({
      id: m.id,
      topic: m.topic,
      key: typeof m.key === 'string' ? m.key : null,
      payload: JSON.stringify(m.payload ?? null),
      headers: m.headers && typeof m.headers === 'object' ? JSON.stringify(m.headers) : '{}',
      attempts: 1,
      createdAtMs: typeof m.created === 'number' ? m.created : Date.now(),
      state: 'processing',
    })
  }
  return { rows }
}
